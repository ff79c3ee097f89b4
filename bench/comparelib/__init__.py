"""bench/compare's parts: the transports, one run of the MPI benchmark, perftest's raw
limits, the CSV and the page, the plots."""
