"""One module per command-line verb; each exposes `main(argv: list[str]) -> int` and
`cli` imports it only when its verb is given. `syntax` is the concrete syntax tree
(comments kept) that `fmt`, `new` and `diff` edit or compare."""
