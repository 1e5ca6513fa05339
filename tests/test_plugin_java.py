"""The plugin's Java unit tests, on both OpenSearch lines (Maven's `test` phase).

Why from pytest: the builds that make the plugin zips for the nodes skip them
(`-DskipTests`, so that a node's first start stays short), so nothing else runs them in
`make test`. They include the Java half of the equality claims: the normalizer over the
shared vectors (tests/vectors/keywords) and the students over the shared student fixtures
(tests/vectors/students, StudentVectorsTest), each against what Python writes, and
the same check on fixtures written here from a run on Home Depot text.
"""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cogr_search.data import load_dataset
from cogr_search.data.subset import judged_subset, write_beir
from cogr_search.localnode.build import file_lock, plugins_dir
from cogr_search.localnode.engine_lines import OPENSEARCH, OPENSEARCH_3, EngineLine
from cogr_search.localnode.java import jdk_for
from tests.make_student_vectors import write_vectors
from tests.requirements_check import shared_data_set

# Every test class of plugins/cogr-plugin/src/test; a new one is added here as it is written.
CLASSES = {
    "org.cogr.opensearch.keywords.KeywordNormalizerVectorsTest",
    "org.cogr.opensearch.search.ExpandedQueryTest",
    "org.cogr.opensearch.search.FactoryConfigTest",
    "org.cogr.opensearch.service.ServiceAuthTest",
    "org.cogr.opensearch.student.StudentVectorsTest",
}


@pytest.mark.parametrize("line", [OPENSEARCH, OPENSEARCH_3], ids=lambda line: line.line)
def test_the_plugins_java_tests_pass(line: EngineLine) -> None:
    root = plugins_dir()
    reports = root / "cogr-plugin" / line.build_dir / "surefire-reports"
    jdk = jdk_for(line)
    command = ["mvn", "-q", "-B", "-Dstyle.color=never", "-f", str(root / "pom.xml"), "-pl", "cogr-plugin",
               *line.maven_args, "test"]
    with file_lock(root / "target" / ".build.lock"):  # the node builds share these folders
        for old in reports.glob("TEST-*.xml"):
            old.unlink()
        done = subprocess.run(command, env=jdk.env() if jdk is not None else None, capture_output=True, text=True,
                              timeout=900, check=False)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    suites = {path.name: ET.parse(path).getroot() for path in reports.glob("TEST-*.xml")}
    assert {suite.get("name") for suite in suites.values()} == CLASSES
    for suite in suites.values():
        assert int(suite.get("tests", "0")) > 0, suite.get("name")
        assert suite.get("failures") == "0" and suite.get("errors") == "0", suite.get("name")
        assert suite.get("skipped") == "0", suite.get("name")


@pytest.mark.slow
def test_the_java_students_give_what_python_gives_on_a_home_depot_run(tmp_path: Path) -> None:
    """The shared fixtures again, from a run on real Home Depot text (150 judged queries and
    their items, read from ../shared/data at run time, never committed): both models'
    exports and the keywords Python gives, checked by the plugin's StudentVectorsTest."""
    source = shared_data_set("homedepot")
    catalog = tmp_path / "homedepot-subset"
    write_beir(judged_subset(load_dataset(source), 150, seed=0), catalog, "test_plugin_java: 150 Home Depot queries")
    rows = write_vectors(tmp_path / "vectors", catalog, [])
    assert rows > 1000
    root = plugins_dir()
    command = ["mvn", "-q", "-B", "-Dstyle.color=never", "-f", str(root / "pom.xml"), "-pl", "cogr-plugin",
               *OPENSEARCH.maven_args, "test", "-Dtest=StudentVectorsTest",
               f"-Dcogr.student.vectors={tmp_path / 'vectors'}"]
    with file_lock(root / "target" / ".build.lock"):
        done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    report = ET.parse(root / "cogr-plugin" / OPENSEARCH.build_dir / "surefire-reports"
                      / "TEST-org.cogr.opensearch.student.StudentVectorsTest.xml").getroot()
    properties = {p.get("name"): p.get("value") for p in report.iter("property")}
    assert properties.get("cogr.student.vectors") == str(tmp_path / "vectors")  # it read these, not the committed ones
    assert report.get("failures") == "0" and report.get("errors") == "0" and int(report.get("tests", "0")) >= 2
