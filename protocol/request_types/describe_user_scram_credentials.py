"""DescribeUserScramCredentials requests v0-0 as kio reads them, for
broker/handlers/describe_user_scram_credentials.py."""

from typing import TypeAlias

from kio.schema.describe_user_scram_credentials.v0 import request as v0

__all__ = ("UserName", "DescribeUserScramCredentialsRequest")

UserName: TypeAlias = v0.UserName
DescribeUserScramCredentialsRequest: TypeAlias = v0.DescribeUserScramCredentialsRequest
