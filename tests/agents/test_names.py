import re

from agents.names import event_file_name, slug


def test_event_file_names_are_safe_stable_and_distinct():
    ids = ["/etc/passwd", "../results", "..", ".", "", "x", "./x", "X", "a\x00b", "a/b", "a\\b", "y" * 300,
           "\ud800lone", "名前", "demo-001", "demo 001", "demo_001"]
    names = [event_file_name(i) for i in ids]
    assert len(set(names)) == len(ids)
    for n in names:
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}-[0-9a-f]{10}\.jsonl", n), n
    assert event_file_name("demo-001") == event_file_name("demo-001") == "demo-001-" + event_file_name("demo-001")[9:]
    # the seed and the condition are part of the name
    assert len({event_file_name("c", s, cond) for s in (0, 1) for cond in ("base", "markers")}) == 4


def test_slug_keeps_what_people_read():
    assert slug("agentclinic_medqa-001") == "agentclinic_medqa-001"
    assert slug("../../etc/passwd") == "etc-passwd"
    assert slug("...") == "case" and slug("") == "case"
