"""Commands answered without building the Typer app: the read-only ones scripts call often."""
