import random
from collections import deque

import pytest

from agents.cases import load_cases
from agents.events import EventLog, read_events
from agents.llm.scripted import ScriptedLLM
from game.geometry import Tile
from game.hospital_map import MapError, load_map
from game.pathfinding import NoPath, astar
from game.orders import OrderRouter
from game.world import World, WorldConfig
from tests.game.tmx import small_hospital
from tests.helpers import cast_builder, roles
from agents.scorers import DiagnosisScorer


def _world(hmap, cases, llm, config, **kw):
    llms = roles(llm)
    return World(hmap, cases, cast_builder(llms), [DiagnosisScorer(llms["judge"])], config, **kw)


def test_small_map_loads_and_everything_is_reachable(tmp_path):
    m = load_map(small_hospital(tmp_path))
    reach = m.reachable_from(m.point("entrance_spawn").tile)
    for room in m.rooms.values():
        assert any(c in reach for c in room.rect.cells()), room.name
    assert m.rooms["imaging_xray"].address == "hospital:imaging:xray"
    assert m.point("lab_station").room == "lab"


def test_missing_or_unreachable_room_is_named(tmp_path):
    with pytest.raises(MapError, match="required room 'records' is missing"):
        load_map(small_hospital(tmp_path, drop_room="records"))
    with pytest.raises(MapError, match="room 'lab' .*cannot be reached"):
        load_map(small_hospital(tmp_path, wall_off="lab"))
    with pytest.raises(MapError, match="not found"):
        load_map(tmp_path / "nope.tmx")


def _bfs(start, goal, walkable):
    prev = {start: None}
    q = deque([start])
    while q:
        cur = q.popleft()
        if cur == goal:
            n = 0
            while prev[cur] is not None:
                cur = prev[cur]
                n += 1
            return n
        for nb in cur.neighbours4():
            if nb not in prev and walkable(nb):
                prev[nb] = cur
                q.append(nb)
    return None


def test_astar_is_optimal_on_random_grids():
    rng = random.Random(5)
    for _ in range(200):
        w, h = rng.randint(3, 12), rng.randint(3, 12)
        free = {Tile(x, y) for x in range(w) for y in range(h) if rng.random() > 0.3}
        if len(free) < 2:
            continue
        a, b = rng.sample(sorted(free), 2)
        best = _bfs(a, b, free.__contains__)
        if best is None:
            with pytest.raises(NoPath):
                astar(a, b, free.__contains__)
            continue
        path = astar(a, b, free.__contains__)
        assert path[0] == a and path[-1] == b and len(path) - 1 == best
        assert all(p in free for p in path)
        assert all(p.manhattan(q) == 1 for p, q in zip(path, path[1:]))


def test_test_room_mapping(tmp_path):
    m = OrderRouter.from_map(load_map(small_hospital(tmp_path)))
    assert m.route("Complete Blood Count").station == "lab_station"
    assert m.route("12-lead ECG").station == "ecg_station"
    assert m.route("EKG").station == "ecg_station"
    assert m.route("Chest X-Ray").station == "xray_station"
    assert m.route("CT Pulmonary Angiogram").station == "ct_station"
    assert m.route("MRI Brain").station == "ct_station"
    assert m.route("Ultrasound Abdomen").station == "ct_station"
    assert m.route("Vital signs").bedside
    assert m.route("Serum frobnicase").station == "lab_station"


def _shift(tmp_path, name, seed=0, patients=6, doctors=2):
    cases, _ = load_cases("demo")
    llm = ScriptedLLM({c.id: c for c in cases}, seed=seed)
    hmap = load_map(small_hospital(tmp_path))
    path = tmp_path / f"{name}.jsonl"
    with EventLog(path) as log:
        w = _world(hmap, cases, llm, WorldConfig(doctors=doctors, patients=patients), log=log)
        w.reset(seed)
        w.run(dt=0.25, max_sim_s=20000)
    return w, path


def test_shift_six_patients_two_doctors(tmp_path):
    w, path = _shift(tmp_path, "a")
    assert w.done
    s = w.stats()
    assert s["patients"] == 6 and s["seen"] == 6 and s["diagnosed"] == 6 and s["errors"] == 0
    ev = read_events(path)
    types = [e["type"] for e in ev]
    assert types.count("case_filed") == 6 and types.count("patient_left") == 6 and types[-1] == "shift_finished"
    rooms = OrderRouter.from_map(w.map)
    n_results = 0
    for i, e in enumerate(ev):
        if e["type"] != "test_result":
            continue
        n_results += 1
        route = rooms.route(e["test"])
        want = w.map.point(route.station).room if not route.bedside else None
        req = max(j for j in range(i) if ev[j]["type"] == "test_requested" and ev[j]["case_id"] == e["case_id"])
        arrivals = [x for x in ev[req:i] if x["type"] == "arrived" and x.get("case_id") == e["case_id"]]
        if want:
            assert any(x["room"] == want for x in arrivals), (e["test"], want, arrivals)
        else:
            assert any(x["actor"] == "technician" and x["room"] and x["room"].startswith("consult") for x in arrivals)
    assert n_results >= 6
    # the doctors were both used, and cases were filed in the records room
    assert {e["doctor"] for e in ev if e["type"] == "encounter_started"} == {"doctor-1", "doctor-2"}
    assert all(e["room"] == "records" for e in ev if e["type"] == "case_filed")
    assert all("t" in e for e in ev)


def test_shift_is_deterministic(tmp_path):
    _, a = _shift(tmp_path, "a", seed=3)
    _, b = _shift(tmp_path, "b", seed=3)
    _, c = _shift(tmp_path, "c", seed=4)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


def test_rooms_come_from_the_map_not_the_code(tmp_path):
    """A consultation room renamed/added in Tiled is used without code changes."""
    p = small_hospital(tmp_path)
    p.write_text(p.read_text().replace("consult_2", "consult_7"))
    cases, _ = load_cases("demo")
    llm = ScriptedLLM({c.id: c for c in cases})
    hmap = load_map(p)
    with EventLog(tmp_path / "s.jsonl") as log:
        w = _world(hmap, cases, llm, WorldConfig(doctors=2, patients=4), log=log)
        w.reset(0)
        w.run(dt=0.25, max_sim_s=20000)
    assert w.consult_rooms == ["consult_1", "consult_7"]
    used = {e["room"] for e in read_events(tmp_path / "s.jsonl") if e["type"] == "encounter_started"}
    assert used == {"consult_1", "consult_7"} and w.stats()["seen"] == 4


class _Slow:
    name = "slow"

    def __init__(self, inner, delay):
        self.inner, self.delay = inner, delay

    def generate(self, messages, params, ctx):
        import time

        time.sleep(self.delay)
        return self.inner.generate(messages, params, ctx)


def test_model_calls_never_block_the_world(tmp_path):
    import time

    from game.runner import ThreadRunner

    cases, _ = load_cases("demo")
    slow = _Slow(ScriptedLLM({c.id: c for c in cases}), 0.2)
    runner = ThreadRunner(2)
    try:
        w = _world(load_map(small_hospital(tmp_path)), cases, slow, WorldConfig(doctors=2, patients=2, think_s=0.0),
                   runner=runner)
        w.reset(0)
        worst, saw_thinking = 0.0, False
        deadline = time.time() + 120
        while not w.done and time.time() < deadline:
            t0 = time.perf_counter()
            w.step(0.25)
            worst = max(worst, time.perf_counter() - t0)
            saw_thinking |= any(a.state == "thinking" for a in w.actors.values())
            time.sleep(0.002)
        assert w.done and w.stats()["seen"] == 2
        assert saw_thinking
        assert worst < 0.1  # a step never waits for the 0.2 s model call
    finally:
        runner.close()


def test_the_shift_summary_is_the_bench_summary(tmp_path):
    """Failed consultations are counted apart, never as wrong (World.stats counted them
    as wrong): the world's stats are agents.results.summarise over its rows."""
    from agents.llm.base import Output
    from agents.results import summarise

    cases, _ = load_cases("demo")
    inner = ScriptedLLM({c.id: c for c in cases})

    class RefusingDoctor:  # (a grounded patient never fails: it gives the case's facts; nor does
        name = "refusing"  # a technician shown records: they are its fallback)

        def generate(self, messages, params, ctx):
            if ctx.role == "doctor" and ctx.case_id == w.cases[w._case_order[0]].id:
                return Output("As an AI, I cannot answer that.", self.name)
            return inner.generate(messages, params, ctx)
    w = _world(load_map(small_hospital(tmp_path)), cases, RefusingDoctor(), WorldConfig(doctors=2, patients=3))
    w.reset(0)
    w.run(dt=0.25, max_sim_s=20000)
    s = w.stats()
    assert s["failed"] == 1 and s["seen"] == 3 and s["scored"] == 2
    assert s["accuracy"] == summarise(w.finished)["accuracy"] == s["correct"] / 2
    assert {r["status"] for r in w.finished} >= {"failed"}


def test_world_needs_doctors_and_patients(tmp_path):
    cases, _ = load_cases("demo")
    with pytest.raises(ValueError, match="at least one doctor"):
        _world(load_map(small_hospital(tmp_path)), cases, ScriptedLLM({c.id: c for c in cases}),
               WorldConfig(doctors=0, patients=2))


def test_the_test_menu_comes_from_the_map_and_the_routing(tmp_path):
    from game.catalogue import CATALOGUE, test_menu

    menu = test_menu(load_map(small_hospital(tmp_path)))
    assert menu[0].room == "bedside" and "Vital signs" in menu[0].tests
    by_room = {g.room: g.tests for g in menu}
    assert "Complete blood count" in by_room["lab"] and "12-lead ECG" in by_room["ecg"]
    assert "Chest X-ray" in by_room["imaging_xray"] and "CT head" in by_room["imaging_ct_mri"]
    assert sorted(t for g in menu for t in g.tests) == sorted(CATALOGUE)
    # every menu entry routes to the room it is listed under
    hmap = load_map(small_hospital(tmp_path))
    router = OrderRouter.from_map(hmap)
    for g in menu[1:]:
        assert all(hmap.point(router.route(t).station).room == g.room for t in g.tests)


def test_a_panel_meets_in_the_conference_room_before_the_diagnosis(tmp_path):
    """With a voting panel the doctor walks to the conference room, the votes are said in
    bubbles there, and the diagnosis is announced back at the patient's side."""
    from agents.deliberation import DeliberationConfig, Deliberating
    from agents.participants import CastConfig, llm_cast

    cases, _ = load_cases("demo")
    llm = ScriptedLLM({c.id: c for c in cases})
    llms = roles(llm)

    def cast(case, sink):
        c = llm_cast(case, llms, CastConfig(), sink)
        c["doctor"] = Deliberating(c["doctor"], case, sink, DeliberationConfig(ensemble=3))
        return c
    hmap = load_map(small_hospital(tmp_path))
    with EventLog(tmp_path / "p.jsonl") as log:
        w = World(hmap, cases, cast, [DiagnosisScorer(llm)], WorldConfig(doctors=1, patients=1), log=log)
        w.reset(0)
        said = []
        while not w.done and w.t < 20000:
            w.step(0.25)
            d = w.actors["doctor-1"]
            if d.speech and (not said or said[-1] != d.speech):
                said.append(d.speech)
    ev = read_events(tmp_path / "p.jsonl")
    conf = [e for e in ev if e["type"] == "arrived" and e["actor"] == "doctor-1" and e.get("room") == "conference"]
    assert conf and any(s.startswith("Doctor 1:") for s in said) and any("panel agrees" in s or "chair" in s for s in said)
    i_vote = next(i for i, s in enumerate(said) if s.startswith("Doctor 1:"))
    i_dx = next(i for i, s in enumerate(said) if s.startswith("My diagnosis"))
    assert i_vote < i_dx  # the panel met before the diagnosis was announced (in the bubbles)
    assert w.finished[0]["status"] == "diagnosed"


def test_a_shift_of_focused_doctors_diagnoses_every_patient(tmp_path):
    from agents.participants import CastConfig

    cases, _ = load_cases("demo")
    llm = ScriptedLLM({c.id: c for c in cases})
    llms = roles(llm)
    w = World(load_map(small_hospital(tmp_path)), cases,
              cast_builder(llms, CastConfig(doctor_strategy="focused", max_turns=8)), [DiagnosisScorer(llm)],
              WorldConfig(doctors=2, patients=3))
    w.reset(0)
    w.run(dt=0.25, max_sim_s=20000)
    s = w.stats()
    assert w.done and s["seen"] == 3 and s["diagnosed"] == 3 and s["errors"] == 0


def _bubble_of(w, enc):
    """A line of this consultation on screen (a speech bubble of one of its actors)."""
    people = [enc.doctor, enc.patient, enc.technician]
    return any(a is not None and a.speech for a in people)


def test_a_consultation_always_shows_what_it_is_doing_between_its_lines(tmp_path):
    """The dialogue panel's activity row: between two lines of a consultation the world
    says what is happening (who walks where, who is thinking, which test runs), read
    from the encounter; no stretch of a shift leaves a started consultation silent."""
    cases, _ = load_cases("demo")
    llm = ScriptedLLM({c.id: c for c in cases}, seed=1)
    w = _world(load_map(small_hospital(tmp_path)), cases, llm, WorldConfig(doctors=2, patients=4))
    w.reset(1)
    silent: dict[str, float] = {}
    worst, tested = 0.0, 0
    while not w.done and w.t < 20000:
        w.step(0.25)
        for enc in w.encounters:
            if enc.sink is None or enc.phase.value in ("done", "filing"):
                continue
            said = w.activity(enc)
            if enc.phase.value == "at_test":
                assert said and enc.order in said, (said, enc.order)  # names the test being done
                tested += 1
            if enc.phase.value == "doctor":
                assert said and "thinking" in said
            if said or _bubble_of(w, enc):
                silent.pop(enc.case.id, None)
            else:
                silent.setdefault(enc.case.id, w.t)
                worst = max(worst, w.t - silent[enc.case.id])
    assert w.done and tested
    assert worst <= 0.5, worst  # at most a step or two between a line ending and the next news


def test_a_call_started_early_is_named_beside_the_step_on_screen(tmp_path):
    import time

    from game.runner import ThreadRunner

    cases, _ = load_cases("demo")
    runner = ThreadRunner(2)
    try:
        w = _world(load_map(small_hospital(tmp_path)), cases, _Slow(ScriptedLLM({c.id: c for c in cases}), 0.3),
                   WorldConfig(doctors=1, patients=1), runner=runner)
        w.reset(0)
        seen: dict[str, set[str]] = {}
        deadline = time.time() + 120
        while not w.done and time.time() < deadline:
            w.step(0.25)
            for enc in w.encounters:
                said = w.activity(enc)
                if said and ";" in said:
                    seen.setdefault(enc.phase.value, set()).add(said.split("; ")[1])
            time.sleep(0.002)
        assert w.done
        assert seen.get("gathering") == {"doctor-1 thinks ahead"}, seen  # the first turn, on the way in
        assert seen.get("to_test") == {"the result is being read"}, seen  # on the way to the machine
        assert seen.get("from_test") == {"doctor-1 thinks ahead"}, seen  # the next turn, on the way back
        assert "at_test" not in seen, seen  # the step on screen is the call: said once
    finally:
        runner.close()


def test_a_patient_who_comes_in_while_a_doctor_is_free_is_assigned_at_the_desk(tmp_path):
    """The first patient gets the free doctor and room as they come in: the doctor's first
    turn starts while they check in (a cold first call has the check-in's time too), they
    go from the desk straight to the room, and the log says so in order (the encounter
    before any line of its consultation). A patient who comes in while every doctor is
    busy waits in the waiting room, as before."""
    cases, _ = load_cases("demo")
    log_path = tmp_path / "shift.jsonl"
    with EventLog(log_path) as log:
        w = _world(load_map(small_hospital(tmp_path)), cases, ScriptedLLM({c.id: c for c in cases}),
                   WorldConfig(doctors=1, patients=2, arrival_interval_s=1.0), log=log)
        w.reset(0)
        phases: dict[str, list[str]] = {}
        opened_in: dict[str, str] = {}
        while not w.done and w.t < 3600:
            w.step(0.25)
            for enc in w.encounters:
                seen = phases.setdefault(enc.patient.id, [])
                if not seen or seen[-1] != enc.phase.value:
                    seen.append(enc.phase.value)
                if enc.consultation is not None and enc.patient.id not in opened_in:
                    opened_in[enc.patient.id] = enc.phase.value
    assert w.done
    assert opened_in["patient-1"] in ("checkin", "checkin_wait"), opened_in
    assert "waiting" not in phases["patient-1"], phases["patient-1"]
    assert phases["patient-1"][:3] == ["checkin", "checkin_wait", "gathering"], phases["patient-1"]
    assert "waiting" in phases["patient-2"], phases["patient-2"]  # doctor-1 was busy
    events = read_events(log_path)
    first = next(e.get("case_id") for e in events if e.get("type") == "encounter_started")
    started = next(i for i, e in enumerate(events) if e.get("type") == "encounter_started")
    walking = ("spawned", "move", "arrived", "header")
    assert all(e.get("case_id") != first for e in events[:started] if e.get("type") not in walking)
