module sand/tests/faults/loadgen

go 1.21
