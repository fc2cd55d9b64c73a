#!/usr/bin/env python3
"""Set-up-free entry point: ``python3 run.py demo`` or ``python3 run.py test``.

Creates (or reuses) ``.venv`` next to this file, installs pyticdc with everything it needs
when pyproject.toml changed since the last install, resolves the JVM jars (Spark's Kafka source,
delta-spark, an Apache Kafka broker for the tests) from Maven Central into ``.jars/`` once, then runs the
requested job.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".pyticdc-install-stamp"
#: The project-local jar cache: ``spark/`` goes on Spark's classpath, ``kafka/`` is the test broker's.
JARS = ROOT / ".jars"
JARS_POM = ROOT / "tools" / "jars" / "pom.xml"
JARS_SETTINGS = ROOT / "tools" / "jars" / "settings.xml"
#: delta-spark built against each Spark minor version (the Spark its POM compiles against), newest first.
DELTA_FOR_SPARK = {"4.0": ["4.0.1", "4.0.0"], "4.1": ["4.3.1", "4.3.0", "4.2.0", "4.1.0"]}
#: The Apache Kafka broker the tests run (4.x: KRaft only, Java 17), then the nearest versions to fall back on.
KAFKA_VERSIONS = ["4.4.0", "4.3.1", "4.2.0"]
#: Artifacts pyspark ships under another name: jcl-over-slf4j is commons-logging's API, and RoaringBitmap 1.x
#: (pyspark's) needs no shims jar.
ALSO_SHIPPED = ["commons-logging", "shims"]


def _fingerprint() -> str:
    # setup.py and the C helpers too: an editable install builds them in place.
    digest = hashlib.sha256()
    for path in [ROOT / "pyproject.toml", ROOT / "setup.py", *sorted((ROOT / "src").rglob("*.c"))]:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def ensure_environment() -> None:
    """Create the virtual environment and install the project with all extras if needed; provision the jars."""
    if not PYTHON.exists():
        print(f"creating virtual environment in {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    if not (STAMP.exists() and STAMP.read_text() == _fingerprint()):
        _install()
    ensure_jars()


def _install() -> None:
    print("installing pyticdc and its dependencies (first run only)", flush=True)
    subprocess.run([str(PYTHON), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True)
    subprocess.run([str(PYTHON), "-m", "pip", "install", "--quiet", "-e", f"{ROOT}[all]"], check=True)
    # The developer tools (pytest, mypy, ruff) are a dependency group, not a user-facing extra.
    subprocess.run([str(PYTHON), "-m", "pip", "install", "--quiet", "--group", f"{ROOT / 'pyproject.toml'}:dev"],
                   check=True)
    STAMP.write_text(_fingerprint())


# --------------------------------------------------------------------------- JVM jars
def _site_packages() -> Path | None:
    for candidate in [*sorted(VENV.glob("lib/python*/site-packages")), VENV / "Lib" / "site-packages"]:
        if candidate.is_dir():
            return candidate
    return None


def _pyspark_version(site: Path) -> str | None:
    found = sorted(site.glob("pyspark-*.dist-info"))
    return found[-1].name[len("pyspark-"):-len(".dist-info")] if found else None


def _artifact_id(jar: str) -> str:
    # "spark-sql-kafka-0-10_2.13-4.1.1.jar" -> "spark-sql-kafka-0-10_2.13": the version is the last part
    # that starts with digit.digit (a classifier may follow it: "zstd-jni-1.5.7-6").
    match = re.match(r"^(.*)-(\d+\.\d+[^-]*(?:-[^-]+)?)\.jar$", jar)
    return match.group(1) if match else jar[:-len(".jar")]


def _mvn(profile: str, properties: dict[str, str], output: Path, log: Path) -> list[str]:
    """Copy one profile's runtime dependencies to ``output``; the coordinates Maven could not find, if it failed."""
    command = ["mvn", "-B", "-gs", str(JARS_SETTINGS), "-f", str(JARS_POM), "-P", profile,
               "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={output}",
               *(f"-D{name}={value}" for name, value in properties.items())]
    with open(log, "a") as handle:
        handle.write(f"$ {' '.join(command)}\n")
        handle.flush()
        done = subprocess.run(command, cwd=JARS, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        handle.write(done.stdout)
    if done.returncode == 0:
        return []
    refused = sorted(set(re.findall(r"(?:Could not find artifact|Could not resolve dependencies.*?:) ?(\S+:jar:\S+)",
                                    done.stdout)))
    return refused or [f"{profile} {properties} (mvn exit {done.returncode}, see {log})"]


def _resolve(profile: str, candidates: list[dict[str, str]], output: Path, log: Path,
             exclude: str = "") -> tuple[dict[str, str] | None, list[str]]:
    """The first candidate version set Maven resolves, copied to ``output``; and what it refused before."""
    refused: list[str] = []
    for properties in candidates:
        scratch = Path(tempfile.mkdtemp(prefix=f"{profile}-", dir=JARS))
        try:
            extra = {**properties, **({"excludeArtifactIds": exclude} if exclude else {})}
            failed = _mvn(profile, extra, scratch, log)
            if not failed:
                output.mkdir(parents=True, exist_ok=True)
                for jar in scratch.glob("*.jar"):
                    shutil.move(str(jar), output / jar.name)
                return properties, refused
            refused.extend(failed)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return None, refused


def ensure_jars() -> Path | None:
    """Resolve Spark's Kafka source, delta-spark and an Apache Kafka broker into ``.jars/`` (once); None without.

    ``.jars/spark``: the jars to add to Spark's classpath (spark-sql-kafka matching pyspark, or the nearest
    served version; delta-spark for that Spark), minus what pyspark ships. ``.jars/kafka``: the broker the
    ``jvm`` tests start. ``.jars/resolved.json`` records the versions and any coordinates Maven refused.
    Needs ``mvn`` and Maven Central; without them the ``jvm`` tests are skipped (failed under CI).
    """
    site = _site_packages()
    spark_version = _pyspark_version(site) if site else None
    if site is None or spark_version is None:
        return None
    stamp = JARS / "resolved.json"
    key = hashlib.sha256(JARS_POM.read_bytes() + JARS_SETTINGS.read_bytes() + spark_version.encode()
                         + json.dumps([DELTA_FOR_SPARK, KAFKA_VERSIONS, ALSO_SHIPPED]).encode()).hexdigest()
    if stamp.exists():
        try:
            if json.loads(stamp.read_text()).get("key") == key:
                return JARS
        except ValueError:
            pass
    if shutil.which("mvn") is None:
        print("note: no mvn on the PATH: the JVM jars (Spark's Kafka source, delta-spark, the Kafka broker) are "
              "not provisioned and the jvm tests will not run", flush=True)
        return None
    print(f"resolving the JVM jars for Spark {spark_version} into {JARS} (first run only)", flush=True)
    started = time.monotonic()
    shutil.rmtree(JARS, ignore_errors=True)
    JARS.mkdir()
    log = JARS / "mvn.log"
    shipped = sorted({_artifact_id(j.name) for j in (site / "pyspark" / "jars").glob("*.jar")} | {*ALSO_SHIPPED})
    exclude = ",".join(shipped)
    major, minor, patch = [*spark_version.split("."), "0", "0"][:3]
    line = f"{major}.{minor}"
    patches = range(int(re.sub(r"\D.*", "", patch) or 0), -1, -1)
    spark, refused = _resolve("spark-kafka", [{"spark.version": f"{line}.{p}"} for p in patches],
                              JARS / "spark", log, exclude)
    delta, refused_delta = _resolve("delta", [{"delta.version": v} for v in DELTA_FOR_SPARK.get(line, [])],
                                    JARS / "spark", log, exclude)
    kafka, refused_kafka = _resolve("kafka-broker", [{"kafka.version": v} for v in KAFKA_VERSIONS],
                                    JARS / "kafka", log)
    refused += refused_delta + refused_kafka
    for coordinates in refused:
        print(f"note: Maven Central refused {coordinates}; used the nearest served version", flush=True)
    size = sum(f.stat().st_size for f in JARS.rglob("*.jar"))
    resolved = {"key": key, "pyspark": spark_version, "spark-sql-kafka": (spark or {}).get("spark.version"),
                "delta-spark": (delta or {}).get("delta.version"), "kafka": (kafka or {}).get("kafka.version"),
                "refused": refused, "seconds": round(time.monotonic() - started, 1), "bytes": size}
    if spark is None or delta is None or kafka is None:
        print(f"note: could not resolve every JVM jar ({resolved}); see {log}", flush=True)
        return None
    stamp.write_text(json.dumps(resolved, indent=1) + "\n")
    print(f"resolved the JVM jars in {resolved['seconds']} s ({size / 1e6:.0f} MB)", flush=True)
    return JARS


def main(argv: list[str]) -> int:
    """Run ``demo`` (the main job), ``test`` (the whole suite) or any ``pyticdc`` command."""
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    ensure_environment()
    command, rest = argv[0], argv[1:]
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    if (JARS / "spark").is_dir():
        # pyticdc's spark_session puts these on Spark's classpath (format("kafka"), delta-spark).
        env.setdefault("PYTICDC_JARS", str(JARS / "spark"))
    if command == "test":
        args = [str(PYTHON), "-m", "pytest", "-p", "no:cacheprovider", *rest]
    else:
        args = [str(BIN / "pyticdc"), command, *rest]
    return subprocess.run(args, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
