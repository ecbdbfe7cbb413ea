"""Exit 0 when the service on 127.0.0.1:PORT answers /health with 200 (a Kubernetes exec probe).

The host agent listens on 127.0.0.1 only, so the kubelet's own HTTP probe cannot reach it.
"""

import sys
import urllib.request

try:
    with urllib.request.urlopen(f"http://127.0.0.1:{int(sys.argv[1])}/health", timeout=4) as r:
        sys.exit(0 if r.status == 200 else 1)
except Exception as exc:  # any failure is "not healthy"; say which
    print(f"probe: {exc}", file=sys.stderr)
    sys.exit(1)
