#!/bin/sh
if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then
  exec valgrind -q --tool=callgrind --dump-instr=yes --callgrind-out-file="$OUT" --toggle-collect=MPI_Allreduce "$@"
fi
exec "$@"
