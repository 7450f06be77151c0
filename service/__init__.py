"""AzulSim's user-facing side: the ``azulsim`` CLI (and, later, the gRPC server and client).

Nothing here plays batches in a server process; the CLI's in-process ``simulate`` calls
`sim.jobs.local` (docs/design.md, "Parts and the flow of a job").
"""
