"""Data-parallel training over several processes: the Collective interface the runtime
talks to (collective.py), its MPI (mpi.py) and NCCL (nccl.py) engines, the program that
averages gradients across processes (program.py) and `--procs N` (launch.py)."""
