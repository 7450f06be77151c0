"""Experiments: jobs built for a research question, each one `sim.jobs.spec.JobSpec`:
a parameter sweep (`sweep`), a round-robin tournament (`tournament`), SPSA tuning (`tune`)
and the balance lab (`balance_lab`).
"""
