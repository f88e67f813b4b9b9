"""langchain-tests' vector store suite with `PolymemVectorStore` (see SOURCE.md)."""

EXPECTED_FAILURES: dict[str, str] = {}
