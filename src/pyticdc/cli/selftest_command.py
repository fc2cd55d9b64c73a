"""``pyticdc selftest``: simulate TiDB, produce through TiCDC's routing with faults, consume, compare.

Each run simulates a seeded workload (every column type, DDL, key changes), routes it with the chosen
protocol and dispatcher, injects the chosen faults (duplicated records, replayed offset ranges after
simulated TiCDC restarts with stale watermarks, garbage records, consumer crashes), consumes it with
the consumer engine and checks the replica against the simulator's ground truth after every apply
unit. Prints ``replica equals source at K watermarks`` per run and exits 0, or prints the first
difference (table, key, column, expected, got) and exits 1.
"""

from __future__ import annotations

import argparse
import itertools
import time
from typing import Any, Final

from pyticdc.cli.common import FAILURE, USAGE, add_modelling_flags, modelling_from_args, parse_assignments, report
from pyticdc.codec import PROTOCOLS, canonical_protocol
from pyticdc.errors import ConfigError, PyticdcError

__all__ = ["add_parser"]

FAULTS: Final = ("duplicates", "replays", "restarts", "garbage", "crashes")
DISPATCHERS: Final = ("default", "table", "index-value", "ts")
# Canal-JSON and Debezium carry watermarks (and exact commit ts) only with the TiDB extension; a
# consumer cannot complete anything without watermarks, so selftest turns it on unless told otherwise.
NEEDS_EXTENSION: Final = ("canal-json", "debezium")


def add_parser(subparsers: Any) -> None:
    """Register ``selftest``."""
    parser = subparsers.add_parser(
        "selftest", help="simulate, produce with faults, consume and compare the replica with the ground truth",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-p", "--protocol", action="append", metavar="PROTOCOL",
                        help=f"protocol to test, repeatable (default: every built one of {', '.join(PROTOCOLS)})")
    parser.add_argument("-o", "--option", action="append", metavar="NAME=VALUE", default=[],
                        help="codec option by its TiCDC name, repeatable, e.g. -o encoding-format=avro (default: "
                             "TiCDC's defaults, with enable-tidb-extension=true for canal-json and debezium)")
    parser.add_argument("--seed", type=int, default=1, metavar="N", help="first workload seed (default 1)")
    parser.add_argument("--seeds", type=int, default=1, metavar="N",
                        help="number of consecutive seeds to run (default 1)")
    parser.add_argument("--partitions", type=int, default=3, metavar="N",
                        help="partitions of the simulated topic (default 3)")
    parser.add_argument("--dispatcher", action="append", choices=DISPATCHERS, metavar="RULE",
                        help=f"partition dispatcher, one of {', '.join(DISPATCHERS)}, repeatable (default: default)")
    parser.add_argument("--faults", default="duplicates,replays,restarts,crashes", metavar="FAULTS",
                        help=f"comma-separated faults from {', '.join(FAULTS)}, or all or none "
                             "(default: duplicates,replays,restarts,crashes)")
    parser.add_argument("--transactions", type=int, default=60, metavar="N",
                        help="transactions per workload (default 60)")
    parser.add_argument("--engine", choices=("python", "spark"), default="python",
                        help="consume with the pure-Python engine or the Spark pipeline (default python)")
    parser.add_argument("--apply-engine", action="append", choices=APPLY_ENGINES, metavar="ENGINE",
                        help="with --engine spark: the replication's apply engine, one of "
                             f"{', '.join(APPLY_ENGINES)}, repeatable (default: driver and auto; auto is "
                             "distributed unless the modelling needs the driver)")
    parser.add_argument("--kafka", metavar="HOST:PORT",
                        help="with --engine spark: produce the faulty logs to new topics on this Kafka broker and "
                             "replicate from there instead of capture files (default: capture files)")
    parser.add_argument("--reader", action="append", choices=("pyticdc", "kafka"), metavar="READER",
                        help="with --kafka: what reads the topics, pyticdc (the data source) or kafka (Spark's "
                             "format(\"kafka\"), spark-sql-kafka on the classpath), repeatable (default pyticdc)")
    # No --on-truncate: the truth (pyticdc.sim.oracle) always empties a truncated table. No --schema-evolution
    # fail: it stops at the first DDL, leaving little to compare (the replica tests check it).
    add_modelling_flags(parser, description=(
        "modelled replicas are checked in Delta: --engine python replicates them without Spark "
        "(pyticdc.replica.selftest) against the truth transformed the same way"),
        on_truncate=False, evolutions=("follow", "add-only", "rescue"), helps={
            "--metadata-columns": "metadata columns of the replica tables, as replicate's (_op,_commit_time,"
                                  "_ingested_at; default none)",
            "--soft-delete": "soft deletes: the live rows are compared with the truth, the deleted ones checked "
                             "(default: rows are deleted)",
            "--table-key": "key override, as replicate's --table-key, e.g. --table-key sim.t_uk=a,b (repeatable; "
                           "default none)",
            "--history": "history tables, as replicate's --history (e.g. 'sim.*'): each, dropped ones included, is "
                         "compared with the simulator's version history (repeatable; default none)",
            "--history-columns": "tracked history columns, as replicate's --history-columns (repeatable; default: "
                                 "every column)",
            "--history-table-name": "history table names, as replicate's --history-table-name (default "
                                    "{table}__history)",
            "--columns": "as replicate's --columns (the truth is projected the same way; repeatable; default every "
                         "column)",
            "--exclude-columns": "as replicate's --exclude-columns, e.g. 'sim.*=c_text' (repeatable; default none)",
            "--rename-column": "as replicate's --rename-column, e.g. 'sim.t_np.n=amount' (repeatable; default none)",
            "--table-name": "as replicate's --table-name, e.g. 'sim.*=bronze.sim_{table}' (repeatable; default "
                            "none)",
            "--schema-evolution": "follow (default), add-only (the truth with dropped columns kept: their values at "
                                  "the drop, NULL in rows written since) or rescue (a _rescued_data column, NULL "
                                  "where every DDL is understood); fail is checked by the replica tests (it stops "
                                  "at the first DDL)",
        })
    parser.set_defaults(run=run_selftest)


#: Apply engines of ``SparkReplication`` the Spark selftest runs (``auto``: distributed unless the job needs
#: the driver; ``delta-spark``: distributed with MERGE INTO by Delta on Spark, needs the delta-spark jar).
APPLY_ENGINES = ("driver", "distributed", "delta-spark", "auto")


def _fault_plan(spec: str) -> Any:
    from pyticdc.sim import FaultPlan

    names = set(FAULTS) if spec == "all" else set() if spec in ("none", "") else set(spec.split(","))
    unknown = names - set(FAULTS)
    if unknown:
        raise ConfigError(f"unknown fault(s) {', '.join(sorted(unknown))}; valid: {', '.join(FAULTS)}, all, none")
    return FaultPlan(
        duplicate_rate=0.05 if "duplicates" in names else 0.0,
        restarts=2 if "restarts" in names else 0,
        replays=2 if "replays" in names else 0,
        garbage=2 if "garbage" in names else 0,
        crashes=3 if "crashes" in names else 0,
        redeliver="crashes" in names,
    )


def _options(protocol: str, assignments: list[str]) -> dict[str, Any]:
    options: dict[str, Any] = {"enable-tidb-extension": True} if protocol in NEEDS_EXTENSION else {}
    return {**options, **parse_assignments(assignments, "-o/--option")}


def _workload(args: argparse.Namespace) -> Any:
    """The workload of every run; with delete-only-output-handle-key-columns, without handle-less tables.

    TiCDC does not replicate a table without a handle key under that option (it would need
    force-replicate, which it refuses with it), so such tables are left out as ``produce`` does.
    """
    from pyticdc.cli.produce_command import _key_only_deletes
    from pyticdc.sim.workload import TEMPLATES, WorkloadConfig, handle_less

    if not _key_only_deletes(parse_assignments(args.option, "-o/--option")):
        return WorkloadConfig(transactions=args.transactions)
    left_out = handle_less(tuple(TEMPLATES))
    print(f"left out (no handle key, not replicated with delete-only-output-handle-key-columns): "
          f"{', '.join(left_out)}", flush=True)
    return WorkloadConfig(transactions=args.transactions, tables=tuple(t for t in TEMPLATES if t not in left_out))


def run_selftest(args: argparse.Namespace) -> int:
    """Run every (protocol, dispatcher, seed) combination; 0 if every replica equals its source."""
    try:
        protocols = [canonical_protocol(p) for p in args.protocol] if args.protocol else list(PROTOCOLS)
        plan = _fault_plan(args.faults)
        for protocol in protocols:
            _options(protocol, args.option)  # malformed options fail before any run
        if args.apply_engine and args.engine != "spark":
            raise ConfigError("--apply-engine needs --engine spark")
        args.modelling = modelling_from_args(args)
        if {"distributed", "delta-spark"} & set(args.apply_engine or ()) and args.modelling.driver_only:
            raise ConfigError(f"the distributed apply engine does not implement {', '.join(args.modelling.driver_only)}"
                              " yet: use --apply-engine driver")
        if (args.kafka or args.reader) and args.engine != "spark":
            raise ConfigError("--kafka and --reader need --engine spark")
        if args.reader and not args.kafka:
            raise ConfigError("--reader needs --kafka HOST:PORT (a broker to produce the simulated topics to)")
        if args.engine == "spark":
            return _run_spark(args, protocols, plan)
        return _run_python(args, protocols, plan)
    except ConfigError as exc:
        return report(args, exc, USAGE)
    except PyticdcError as exc:
        return report(args, exc, FAILURE)


def _run_python(args: argparse.Namespace, protocols: list[str], plan: Any) -> int:
    from pyticdc.errors import OracleMismatch
    from pyticdc.replica.selftest import check_history_on_delta
    from pyticdc.sim import check_history, simulate

    config = _workload(args)
    failures = 0
    for protocol in protocols:
        options = _options(protocol, args.option)
        for rule in args.dispatcher or ["default"]:
            rules = [{"matcher": ["*.*"], "partition": rule}]
            for seed in range(args.seed, args.seed + args.seeds):
                started = time.perf_counter()
                label = f"{protocol} {options or ''} dispatcher={rule} seed={seed} partitions={args.partitions}"
                try:
                    if not args.modelling.is_default:
                        delta = check_history_on_delta(simulate(seed, config), protocol, options, plan=plan,
                                                       seed=seed, partitions=args.partitions, rules=rules,
                                                       modelling=args.modelling)
                        print(f"ok   {label}: Delta replica ({args.modelling.describe()}) equals the transformed "
                              f"source at {delta.checks} batches ({delta.records} records, {len(delta.crashes)} "
                              f"crashes, {delta.quarantined} quarantined, {time.perf_counter() - started:.1f}s)")
                        continue
                    report = check_history(simulate(seed, config), protocol, options, plan=plan, seed=seed,
                                           partitions=args.partitions, rules=rules)
                except OracleMismatch as exc:
                    failures += 1
                    print(f"FAIL {label}\n     {exc}")
                    continue
                print(f"ok   {label}: replica equals source at {report.checks} watermarks "
                      f"({report.records} records, {report.crashes} crashes, {report.quarantined} quarantined, "
                      f"{time.perf_counter() - started:.1f}s)")
    return 1 if failures else 0


def _run_spark(args: argparse.Namespace, protocols: list[str], plan: Any) -> int:
    """Every (protocol, dispatcher, seed, apply engine) replicated on Spark to Delta; 0 if every replica is right."""
    from pyticdc.errors import OracleMismatch
    from pyticdc.sim import simulate
    from pyticdc.spark.apply import supports
    from pyticdc.spark.selftest import check_history_on_spark
    from pyticdc.spark.session import spark_session

    engines = args.apply_engine or ["driver", "auto"]
    settings = {"spark.sql.shuffle.partitions": "2"}
    if "delta-spark" in engines:
        from pyticdc.spark.session import check_delta

        check_delta(settings)  # the jar, before Spark starts
    spark = spark_session("pyticdc-selftest", "local[2]", settings, delta="delta-spark" in engines)
    spark.sparkContext.setLogLevel("ERROR")
    config = _workload(args)
    readers = list(dict.fromkeys(args.reader or ["pyticdc"])) if args.kafka else [None]
    if "kafka" in readers:
        from pyticdc.spark.session import has_kafka_source

        if not has_kafka_source(spark):
            raise ConfigError('--reader kafka needs Spark\'s Kafka source (spark-sql-kafka-0-10): python3 run.py '
                              "provisions it in .jars/spark")
    runs = [(protocol, rule, seed, chosen) for protocol in protocols for rule, seed, chosen in itertools.product(
        args.dispatcher or ["default"], range(args.seed, args.seed + args.seeds),
        # auto may be the driver engine (modelling): run it once
        dict.fromkeys(e if e != "auto" else "distributed" if supports(protocol) and not args.modelling.driver_only
                      else "driver" for e in engines))]
    failures = 0
    for (protocol, rule, seed, chosen), reader in itertools.product(runs, readers):
        options = _options(protocol, args.option)
        rules = [{"matcher": ["*.*"], "partition": rule}]
        label = (f"{protocol} {options or ''} dispatcher={rule} seed={seed} partitions={args.partitions} "
                 f"engine=spark apply={chosen}" + (f" reader={reader}" if reader else ""))
        try:
            report = check_history_on_spark(spark, simulate(seed, config), protocol, options, plan=plan, seed=seed,
                                            partitions=args.partitions, rules=rules, engine=chosen,
                                            modelling=args.modelling,
                                            kafka={"bootstrap.servers": args.kafka} if args.kafka else None,
                                            reader=reader or "pyticdc")
        except OracleMismatch as exc:
            failures += 1
            print(f"FAIL {label}\n     {exc}", flush=True)
            continue
        kinds = ", ".join(c.split(" ", 1)[0] for c in report.crashes) or "none"
        print(f"ok   {label}: Delta replica equals source at {report.checks} batches ({report.records} "
              f"records, {len(report.crashes)} crashes: {kinds}; {report.quarantined} quarantined, "
              f"{report.seconds:.1f}s)", flush=True)
    return 1 if failures else 0
