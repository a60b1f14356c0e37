"""AlterUserScramCredentials requests v0-0 as kio reads them, for broker/handlers/alter_user_scram_credentials.py."""

from typing import TypeAlias

from kio.schema.alter_user_scram_credentials.v0 import request as v0

__all__ = ("ScramCredentialDeletion", "ScramCredentialUpsertion", "AlterUserScramCredentialsRequest")

ScramCredentialDeletion: TypeAlias = v0.ScramCredentialDeletion
ScramCredentialUpsertion: TypeAlias = v0.ScramCredentialUpsertion
AlterUserScramCredentialsRequest: TypeAlias = v0.AlterUserScramCredentialsRequest
