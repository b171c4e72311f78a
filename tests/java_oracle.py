"""The Java programs the HdrHistogram text is compared with: HdrHistogram's own HistogramLogProcessor (the jar
`make java-oracle` fetches into ~/.m2, or BENCHBOOK_HDRHISTOGRAM_JAR) and Java's String.format. Without java or
the jar the calling test skips, naming what is missing."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def hdrhistogram_jar(version: str = "*") -> str | None:
    """The HdrHistogram jar of `version` in ~/.m2 (the newest for "*"; BENCHBOOK_HDRHISTOGRAM_JAR overrides "*")."""
    env = os.environ.get("BENCHBOOK_HDRHISTOGRAM_JAR")
    if env and version == "*":
        return env if Path(env).is_file() else None
    m2 = Path.home() / ".m2/repository/org/hdrhistogram/HdrHistogram"
    jars = sorted(glob.glob(str(m2 / version / "HdrHistogram-*.jar")))
    return jars[-1] if jars else None


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        pytest.skip("needs java on PATH (the HdrHistogram comparisons run the real Java tools)")
    return java


def run_histogram_log_processor(*args: str, version: str = "*") -> subprocess.CompletedProcess:
    """`java -cp HdrHistogram.jar org.HdrHistogram.HistogramLogProcessor ARGS` of the jar `version` (2.1.9 with
    the JAXB API it needs, gone from the JDK since Java 11); skips naming what is missing."""
    java, jar = _java(), hdrhistogram_jar(version)
    if jar is None:
        pytest.skip(f"needs the HdrHistogram jar {version} (make java-oracle: mvn dependency:get "
                    "-Dartifact=org.hdrhistogram:HdrHistogram:VERSION, or BENCHBOOK_HDRHISTOGRAM_JAR)")
    if version == "2.1.9":
        jaxb = glob.glob(str(Path.home() / ".m2/repository/javax/xml/bind/jaxb-api/2.3.1/jaxb-api-2.3.1.jar"))
        if not jaxb:
            pytest.skip("needs javax.xml.bind:jaxb-api:2.3.1 (make java-oracle)")
        jar += ":" + jaxb[0]
    return subprocess.run([java, "-cp", jar, "org.HdrHistogram.HistogramLogProcessor", *args], capture_output=True,
                          text=True, timeout=120, env={"TZ": "UTC", "PATH": ""})


def histogram_log_processor(*args: str) -> str:
    """stdout of the newest HistogramLogProcessor on ARGS (it must exit 0)."""
    ref = run_histogram_log_processor(*args)
    assert ref.returncode == 0, ref.stderr
    return ref.stdout


def _java_double(v: float) -> str:
    """A double as Double.parseDouble reads it exactly: hexadecimal bits, or Java's names of the others."""
    v = float(v)
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    return v.hex()


def java_format(patterns: list[str], values: list[float]) -> list[list[str]]:
    """Java's String.format(pattern, v) for each value and pattern: one row per value (tests/java_format/Format.java
    run as a single source file, one JVM for all; each double goes in as its exact bits)."""
    java = _java()
    if shutil.which("javac") is None:  # java runs a single source file with the JDK's compiler module
        pytest.skip("needs a JDK (javac) to run tests/java_format/Format.java")
    out = subprocess.run([java, str(HERE / "java_format" / "Format.java"), *patterns],
                         input="".join(f"{_java_double(v)}\n" for v in values), capture_output=True, text=True,
                         timeout=120, env={"PATH": "", "LC_ALL": "C"})
    assert out.returncode == 0, out.stderr
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert len(rows) == len(values) and all(len(r) == len(patterns) for r in rows)
    return rows
