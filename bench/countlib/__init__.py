"""bench/count-verbs' parts: reading callgrind and strace output, fitting per-message
costs with the waiting taken out, and running the programs measured."""
