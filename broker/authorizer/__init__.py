"""ACLs with Kafka's StandardAuthorizer semantics: values (acl.py), the rules and the stored set
(standard.py), and what handlers ask (checks.py)."""
