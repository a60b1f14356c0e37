"""DescribeUserScramCredentials requests v0-0 as kio reads them, for broker/handlers/describe_user_scram_credentials.py:
one union per entity over the versions served (tests/broker/test_request_types.py checks them
against the dispatch table)."""

from typing import TypeAlias

from kio.schema.describe_user_scram_credentials.v0 import request as v0

__all__ = ("UserName", "DescribeUserScramCredentialsRequest")

UserName: TypeAlias = v0.UserName
DescribeUserScramCredentialsRequest: TypeAlias = v0.DescribeUserScramCredentialsRequest
