"""Jobs: the job model (`spec`, `stopping`) and how a job's games are played
(`play`, `self_play`), cut into chunks and counted (`chunk`, `sequential`), written as rows
(`gamerows`) and run in this process (`local`, `alloc`).
"""
