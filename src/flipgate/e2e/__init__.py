"""The end-to-end run: live retrieval for both versions, compared with the frozen run.

The frozen run holds the query and the exact context fixed, so it tells
whether the prompt or model change itself made answers less grounded. The
end-to-end run holds nothing fixed: each case's context is fetched live (by
the base ref's retriever), both versions answer it, the judge scores both, and
each row's verdict is compared with its frozen verdict. A row whose verdict
differs is **retrieval drift**: look at retrieval first. It never blocks.

`retrieval` fetches (command or HTTP, cached per day), `compare` is the pure
row-by-row comparison, `run` wires them to the generation and judging that
the pipeline passes in.
"""
