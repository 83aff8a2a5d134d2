"""``python -m replicate publish``: copy the finished results of a run into the tracked bundle.

Merges with the bundle's other experiments, refuses mixed code versions or protocols within one, rebuilds the
bundle's report, writes MANIFEST.json and the README's measured-results block (``--restore``: the other way)."""

from __future__ import annotations

import argparse
from collections import Counter

from replicate.publish import bundle as bundle_mod
from replicate.publish import checks
from replicate.publish import readme as readme_mod
from replicate.publish.bundle import restore
from replicate.publish.catalogue import EXPERIMENTS


def _describe(p: bundle_mod.Plan) -> None:
    for name, s in p.scans.items():
        versions = ", ".join(f"{kind} {'/'.join(v or 'none recorded' for v in groups)}"
                             for kind, groups in s.versions().items())
        print(f"{name}: {len(s.runs)} finished runs ({versions or 'no runs'}), protocol "
              f"{'/'.join(s.protocols) or 'not recorded'}, {len(s.files)} files")
        for run in s.skipped:
            print(f"  skipped, not finished: {run.id} ({run.missing})")
    for rel in p.unowned:
        print(f"not published (no experiment owns it): {rel}")
    if p.dropped:
        print(f"replaced or retired: {len(p.dropped)} bundle files (--replace-runs, --retire)")
    if p.held_back:
        print(f"held back (of a kind --replace-runs does not name): {len(p.held_back)} finished runs")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m replicate publish", description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default="results", help="results folder of a run (default: results)")
    parser.add_argument("--bundle", default="paper/measured", help="the tracked bundle (default: paper/measured)")
    parser.add_argument("--experiment", nargs="+", action="extend", choices=sorted(EXPERIMENTS), metavar="NAME",
                        help=f"experiments to publish ({', '.join(EXPERIMENTS)}; default: all present)")
    parser.add_argument("--replace", action="store_true",
                        help="drop the bundle's files of the published experiments first (other code version "
                             "or protocol)")
    parser.add_argument("--replace-runs", nargs="+", action="extend", default=[], metavar="EXPERIMENT/KIND",
                        help="let the runs of one kind (e.g. inan/table1) replace the bundle's runs of that kind, "
                             "keeping the experiment's other runs (a rerun of one table under new code)")
    parser.add_argument("--retire", nargs="+", action="extend", default=[], metavar="GLOB",
                        help="drop the bundle files these globs match (relative to the bundle, e.g. 'inan/screen/*'), "
                             "with nothing in their place: results superseded, or from a source the bundle should "
                             "not hold; each glob must match a file")
    parser.add_argument("--readme", default="README.md", help="README whose measured-results block is rewritten")
    parser.add_argument("--no-readme", action="store_true", help="leave the README alone")
    parser.add_argument("--max-mb", type=float, default=20.0, help="size limit of the bundle (default: 20 MB)")
    parser.add_argument("--allow-dirty", action="store_true",
                        help="publish (or rebuild) from a tree with uncommitted changes; MANIFEST.json records the "
                             "sha256 of the diff (default: refuse)")
    parser.add_argument("--dry-run", action="store_true", help="say what would be published; write nothing")
    parser.add_argument("--rebuild", action="store_true",
                        help="publish nothing: rebuild the bundle's report from the bundle itself, re-hash it in "
                             "MANIFEST.json and rewrite the README block (no rerun, no results folder read)")
    parser.add_argument("--redraw", action="store_true", help="with --rebuild: redraw the bundle's figures from its "
                                                              "own tables first")
    parser.add_argument("--restore", action="store_true",
                        help="publish nothing: copy the bundle's finished runs (of --experiment; default all) into "
                             "--results, so that new runs join them and Snakemake builds the tables over all "
                             "without training them again (prepare the data first)")
    args = parser.parse_args(argv)

    if args.restore:
        copied, left_out = restore(args.bundle, args.results, args.experiment)
        print(f"restored into {args.results}: {sum(map(len, copied.values()))} files of {len(copied)} runs "
              f"({sum(1 for f in copied.values() if not f)} already there)")
        if left_out:
            kinds = Counter(f"{run.id.split('/')[0]} {run.kind}" for run in left_out)
            print(f"not restored, so Snakemake trains them again: {len(left_out)} runs whose rule writes files the "
                  f"bundle does not hold (weights, embedding records): {', '.join(f'{n} {k}' for k, n in kinds.items())}"
                  "; `snakemake -n all` prints what that costs")
        return 0
    if not args.dry_run:
        checks.clean_tree(args.allow_dirty)
    if args.rebuild:
        changed = bundle_mod.rebuild(args.bundle, redraw=args.redraw)
        print(f"rebuilt {args.bundle} from itself: {len(changed)} files re-hashed in MANIFEST.json")
    else:
        if not args.no_readme:
            readme_mod.check(args.readme)
        plan = bundle_mod.plan(args.results, args.bundle, args.experiment, args.replace, args.replace_runs,
                                tuple(args.retire))
        _describe(plan)
        if args.dry_run:
            print("dry run: nothing written")
            return 0
        manifest = bundle_mod.publish(plan, args.replace, int(args.max_mb * 1e6))
        size = sum(f["bytes"] for f in manifest["files"].values())
        print(f"published into {args.bundle}: {len(manifest['files'])} files, {size / 1e6:.1f} MB "
              f"(experiments: {', '.join(manifest['experiments'])}); report rebuilt; MANIFEST.json written")
    if not args.no_readme:
        readme_mod.update(args.readme, args.bundle)
        print(f"{args.readme}: measured-results block rewritten")
    return 0
