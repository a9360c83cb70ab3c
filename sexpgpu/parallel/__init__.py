"""Data-parallel training over several processes: the Collective interface the runtime
talks to (collective.py), its MPI engine (mpi.py), the engines that sum a GPU's
gradients (staged.py through host memory, nccl.py over NCCL via libnccl.py) and the
choice between them (select.py), the program that averages gradients across
processes (program.py) and `--procs N` (launch.py, ranks.py)."""
