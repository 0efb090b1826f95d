"""``medsim view`` in a real headless browser (Debian chromium + chromedriver through
selenium; no window, no network): the report loads with its accuracy, a case link
opens the case's transcript, which shows the dialogue. `make test` sets
MEDSIM_REQUIRE_BROWSER=1 so a browser that cannot start fails instead of skipping."""
from __future__ import annotations

import json
import os

import pytest

from agents.results import read_results
from tests.helpers import medsim_view
from medsim.bench import BenchOptions, run_bench
from medsim.spec import build_spec


@pytest.fixture(scope="module")
def browser():
    from medsim.headless import BrowserUnavailable, chromium

    try:
        with chromium(1280, 900) as driver:
            yield driver
    except BrowserUnavailable as e:
        if os.environ.get("MEDSIM_REQUIRE_BROWSER"):
            pytest.fail(f"MEDSIM_REQUIRE_BROWSER is set but no headless browser starts: {e}", pytrace=False)
        pytest.skip(f"no headless browser: {e}")


@pytest.fixture
def viewed(tmp_path):
    """A scripted demo run served by `medsim view` (its own process, any free port)."""
    out = run_bench(build_spec(None, {"cases": "demo", "limit": 3}), BenchOptions(out=tmp_path / "run", progress=False)).out
    with medsim_view(out) as (url, _):
        yield out, url


def test_the_report_opens_and_a_case_link_shows_its_transcript(browser, viewed):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    out, base = viewed
    summary = json.loads((out / "summary.json").read_text())
    browser.get(f"{base}/report.html")
    assert browser.title.startswith("medsim bench: demo")
    assert browser.find_element(By.ID, "accuracy").text == f"{summary['accuracy']:.1%}"
    links = browser.find_elements(By.CSS_SELECTOR, "a.transcript")
    rows = read_results(out / "results.jsonl")
    assert [a.text for a in links] == [r["case_id"] for r in rows]
    links[1].click()
    WebDriverWait(browser, 10).until(ec.url_contains("/transcripts/"))
    assert browser.current_url.endswith(f"/transcripts/{rows[1]['events'].split('/')[1][:-len('.jsonl')]}.html")
    assert browser.find_element(By.ID, "case-id").text == rows[1]["case_id"]
    dialogue = browser.find_element(By.ID, "dialogue")
    doctor = dialogue.find_elements(By.CSS_SELECTOR, ".msg.doctor")
    patient = dialogue.find_elements(By.CSS_SELECTOR, ".msg.patient")
    assert doctor and patient and "What brings you in" in doctor[0].text
    # the doctor's bubbles and the patient's are laid out apart
    assert doctor[0].location["x"] < patient[0].location["x"]
    assert rows[1]["truth"] in browser.find_element(By.ID, "verdict").text
    browser.find_element(By.LINK_TEXT, "\u2190 the report").click()
    WebDriverWait(browser, 10).until(ec.url_contains("/report.html"))


def test_an_osce_report_opens_and_an_encounter_link_shows_its_rounds(browser, tmp_path):
    """An OSCE run served by `medsim view`: the encounters' rows, a link to a transcript
    with the rounds laid out, the judge's marks folded open on a click."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    from medsim.bench import run_bench as run_osce
    from tests.helpers import osce_spec as build_osce_spec

    out = tmp_path / "osce"
    run_osce(build_osce_spec("INTJ_M_PNEUMO,ESFP_F_LUNG", max_rounds=3), BenchOptions(out=out, progress=False))
    rows = read_results(out / "results.jsonl")
    with medsim_view(out) as (url, _):
        browser.get(f"{url}/report.html")
        assert browser.title.startswith("medsim osce:")
        links = browser.find_elements(By.CSS_SELECTOR, "tr.encounter a.transcript")
        assert [a.text for a in links] == [r["case_id"] for r in rows]
        links[0].click()
        WebDriverWait(browser, 10).until(ec.url_contains("/transcripts/"))
        assert browser.find_element(By.ID, "case-id").text == rows[0]["case_id"]
        dialogue = browser.find_element(By.ID, "dialogue")
        assert len(dialogue.find_elements(By.CSS_SELECTOR, ".round")) == rows[0]["rounds"] == 3
        doctor = dialogue.find_elements(By.CSS_SELECTOR, ".msg.doctor")
        patient = dialogue.find_elements(By.CSS_SELECTOR, ".msg.patient")
        assert len(doctor) == len(patient) == 3 and doctor[0].location["x"] < patient[0].location["x"]
        judged = dialogue.find_elements(By.CSS_SELECTOR, ".box.judged details")[0]
        marks = judged.find_elements(By.CSS_SELECTOR, ".mark")
        assert marks and not marks[0].is_displayed()
        judged.find_element(By.TAG_NAME, "summary").click()
        assert marks[0].is_displayed() and marks[0].text in ("met", "not met", "not relevant")
        assert len(browser.find_elements(By.CSS_SELECTOR, "#criteria tbody tr")) == 30
