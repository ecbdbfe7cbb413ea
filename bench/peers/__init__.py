"""Peers of SAND measured by the benchmark suite: Celery, RQ and Ray.

Each peer module (`celery_peer`, `rq_peer`, `ray_peer`) exposes `NAME`, `version()`,
`measure_hop(n, gap_s)` and `measure_pipeline(n, payload)`, and starts and stops its own
private infrastructure on every call. Importing this package loads none of the peers.
"""
