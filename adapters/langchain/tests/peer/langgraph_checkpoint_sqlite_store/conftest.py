"""langgraph-checkpoint-sqlite's store tests with `PolymemStore` in place of `SqliteStore` (see SOURCE.md)."""

EXPECTED_FAILURES: dict[str, str] = {}

NOT_APPLICABLE: dict[str, str] = {
    "test_nonnull_migrations": "checks SqliteStore's own SQL migrations",
    "test_escape_glob_literal": "checks a SqliteStore SQL helper",
    "test_namespace_match_pattern": "checks a SqliteStore SQL helper",
    "test_list_namespaces_prefix_uses_indexable_condition": "checks the SQL SqliteStore generates",
}
