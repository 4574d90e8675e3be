"""What verifying the compiled-artifact cache costs: every entry looked up as a fresh run would.

A lookup re-hashes every file the compiler read for the entry (memoised per run, as in a
real run) and the artifact itself (.o, .so, .gch).  This is the price of never using a
forged, truncated or stale artifact; compare it with the compile it saves.

    python bench/bench_artifacts.py OUT/.vtgen-gradcheck/cache   # or OUT/.vtgen-check/cache
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from vtgen_build.compile import ArtifactCache, FileDigests


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache", type=Path, help="a compiled-artifact cache directory (holding `index`)")
    args = parser.parse_args()
    cache = ArtifactCache.open(args.cache)
    if not cache.entries:
        parser.error(f"{args.cache}: no cache entries there")
    files = FileDigests()
    start = time.perf_counter()
    hits = sum(cache.lookup(key, files) is not None for key in sorted(cache.entries))
    seconds = time.perf_counter() - start
    deps = {p for e in cache.entries.values() for p in e.deps}
    headers = sum(Path(p).stat().st_size for p in deps if Path(p).is_file())
    artifacts = sum(e.size for e in cache.entries.values())
    print(
        f"{len(cache.entries)} entries ({hits} verified), {len(deps)} files read "
        f"({headers / 1e6:.1f} MB) and {artifacts / 1e6:.1f} MB of artifacts hashed in {seconds:.2f}s"
    )
    return 0 if hits == len(cache.entries) else 1


if __name__ == "__main__":
    raise SystemExit(main())
