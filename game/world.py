"""The hospital world: a shift in which patients arrive, wait, are seen by free doctors in
consultation rooms, walk to the lab / ECG / imaging for their tests, get a diagnosis, and
leave while the doctor files the case in the records room.

The consultation itself is ``agents.consultation.Consultation``, the same engine
``medsim bench`` uses, asking the same participants (built by a cast builder from the
run spec) for turns; the diagnosis is scored by the same scorers, and the shift's
summary is the bench's (``agents.results.summarise``). The world only adds movement and
time. Model calls go through a :class:`~game.runner.Runner`, so the simulation never
waits on them (an agent waiting on the model shows ``thinking``). No pygame here.

An encounter moves through :class:`Phase`; each phase has one handler
(``World._on_<phase>``), read top to bottom in the order a visit goes.
"""
from __future__ import annotations

import enum
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from agents.cases.model import Case
from agents.consultation import Consultation, ConsultationConfig
from agents.events import Event, EventSink, Utterance
from agents.llm.progress import CallWatch, watched
from agents.participants import CastBuilder, HumanParticipant, Switchable
from agents.results import case_row, summarise
from agents.consultation import TECHNICIAN
from agents.roles import STAFF, flag_name, get_role, role_names, roles_of_kind
from agents.scorers import Scorer, Transcript, score_case
from game.actors import Actor
from game.appearance import PATIENT_SHEETS, age_band, parse_demographics, patient_sprite
from game.control import PlayerIO
from game.events import (
    Arrived, CaseFiled, ControlChanged, EncounterStarted, MoveStarted, PatientLeft, ShiftFinished, Spawned, TestTrip,
)
from game.geometry import Tile
from game.hospital_map import HospitalMap, MapError
from game.pathfinding import NoPath, astar
from game.runner import Handle, InlineRunner, Runner
from game.orders import OrderRouter

__all__ = ["WorldConfig", "World", "Encounter", "Notice", "Phase"]

DOCTOR_SPRITES = ("doctor_1", "doctor_2", "doctor_3")
PATIENT_SPRITES = PATIENT_SHEETS  # a patient is drawn as their case's sex and age (game.appearance)


class Phase(enum.Enum):
    CHECKIN = "checkin"  # walking to reception
    CHECKIN_WAIT = "checkin_wait"  # at the desk
    WAITING = "waiting"  # in the waiting room until a doctor and a room are free
    GATHERING = "gathering"  # doctor and patient walking to the consultation room
    DOCTOR = "doctor"  # the doctor's turn is being produced (model call)
    DOCTOR_SPEAKING = "doctor_speaking"  # the doctor's line in a bubble
    REPLY = "reply"  # the patient's answer is being produced
    REPLY_SPEAKING = "reply_speaking"
    TO_TEST = "to_test"  # walking to the test (or the technician to the bedside)
    AT_TEST = "at_test"  # the test runs; the technician's result is produced
    FROM_TEST = "from_test"  # the patient walks back
    TRIP = "trip"  # before announcing: to the records room (memory) or the conference room (a panel)
    TRIP_TALK = "trip_talk"  # there: bubbles say what was found or what the panel said
    TRIP_BACK = "trip_back"
    JUDGING = "judging"  # the consultation closes and is scored
    FILING = "filing"  # the doctor files the case; the patient leaves
    DONE = "done"


@dataclass(frozen=True)
class WorldConfig:
    doctors: int = 2
    patients: int = 6
    arrival_interval_s: float = 15.0  # sim seconds between arrivals
    walk_speed: float = 4.0  # cells per sim second
    think_s: float = 0.8  # an agent shows "thinking" at least this long per model call
    speech_s_per_char: float = 0.035
    speech_min_s: float = 1.5
    speech_max_s: float = 6.0
    checkin_s: float = 2.0
    test_s: float = 3.0  # at the machine
    consultation: ConsultationConfig = ConsultationConfig()
    test_rooms: OrderRouter | None = None  # None: the test stations the map declares
    seed: int = 0  # the run seed (result rows are keyed by it)
    condition: str = "base"


@dataclass(frozen=True)
class Notice:
    """A popup for the view: a test result or a final diagnosis."""

    t: float
    kind: str  # test_result | diagnosis | image
    case_id: str
    title: str
    text: str
    image: str | None = None  # an imaging study's image (path), shown beside its report


class _CaseSink:
    """Tags a consultation's events with its case and the sim time, keeps them as the
    dicts a log holds (the scorers read them) and its utterances for the dialogue
    panel."""

    def __init__(self, world: "World", case_id: str):
        self.world, self.case_id = world, case_id
        self.utterances: list[Utterance] = []
        self.events: list[dict[str, Any]] = []
        self.recalled: list[dict[str, Any]] | None = None  # what the doctor's last retrieval found
        self.panel: list[str] = []  # what the doctor's panel said (votes, roles), in order
        # a call started early (World._may_start_early): its events wait here, and are
        # shown and logged when the world shows its result
        self.held: list[Event] | None = None

    def emit(self, event: Event) -> None:
        self.events.append(event.to_dict())  # the scorers' view: at once, whatever is shown
        if self.held is not None:  # a call started early: the world shows (and logs) it later
            self.held.append(event)
            return
        self._show(event)

    def release(self) -> None:
        """What a call started early said, shown and logged now (on the world's clock)."""
        held, self.held = self.held, None
        for event in held or []:
            self._show(event)

    def _show(self, event: Event) -> None:
        if isinstance(event, Utterance):
            self.utterances.append(event)
        elif event.type == "memory_retrieved":
            self.recalled = list(event.hits)  # type: ignore[attr-defined]
        elif event.type == "image_returned":
            enc = next((e for e in self.world.encounters if e.case.id == self.case_id), None)
            st = next((x for x in enc.case.imaging if x.test == event.study), None) if enc else None  # type: ignore[attr-defined]
            if st is not None and not st.is_url:
                self.world.images.append(Notice(self.world.t, "image", self.case_id, f"{st.test}: {st.body_part or st.modality}",
                                                st.report, st.image))
        elif event.type == "panel_vote":
            self.panel += [f"Doctor {v['member']}: {v['diagnosis'] or '(no vote)'}" for v in event.votes]  # type: ignore[attr-defined]
            self.panel.append(("Tie: the chair decides " if event.tie else "The panel agrees: ")  # type: ignore[attr-defined]
                              + (event.decision or "-"))  # type: ignore[attr-defined]
        elif event.type == "panel_step":
            self.panel.append(f"{event.role.capitalize()}: {event.text}")  # type: ignore[attr-defined]
        self.world._emit(event, case_id=self.case_id)


@dataclass
class Encounter:
    case: Case
    patient: Actor
    doctor: Actor | None = None
    room: str | None = None
    phase: Phase = Phase.WAITING
    consultation: Consultation | None = None
    sink: _CaseSink | None = None
    task: Handle | None = None
    task_started: float = 0.0
    timer: float = 0.0
    technician: Actor | None = None
    test_station: str | None = None
    order: str | None = None  # the test of the current trip (the consultation's pending order, kept)
    bedside: bool = False
    result: dict[str, Any] | None = None  # the results row, once scored
    doctor_seat: Tile | None = None
    patient_seat: Tile | None = None
    held: Any = None  # the doctor's diagnosis, held while it visits the records or conference room
    trips: list[tuple[str, Tile, list[str]]] = field(default_factory=list)  # (why, where, what is said), in order
    lines: list[str] = field(default_factory=list)  # still to be said at the current stop
    ahead: Phase | None = None  # the phase whose model call was started while the last step still showed
    started_t: float | None = None  # sim time the doctor was assigned
    judged_t: float | None = None  # sim time the verdict came
    watch: CallWatch = field(default_factory=CallWatch)  # its model call as it goes (in line, reading, writing)


class World:
    """``reset(seed)`` then ``step(dt)`` until ``done``. The view reads ``actors``,
    ``encounters``, ``notices`` and ``clock``; it never changes them."""

    def __init__(self, hmap: HospitalMap, cases: list[Case], cast: CastBuilder, scorers: Sequence[Scorer],
                 config: WorldConfig, *, sink: EventSink | None = None, runner: Runner | None = None,
                 log: Any = None, player: PlayerIO | None = None, learner: Any = None,
                 engine: Callable[..., Consultation] | None = None,
                 row: Callable[[Case, Sequence[Mapping[str, Any]]], dict[str, Any]] | None = None):
        if not cases:
            raise ValueError("the world needs at least one case")
        if config.doctors < 1 or config.patients < 1:
            raise ValueError(f"the world needs at least one doctor and one patient (got {config.doctors} doctors, "
                             f"{config.patients} patients)")
        self.map, self.cases, self.cast, self.scorers, self.config = hmap, cases, cast, list(scorers), config
        # a person who can take agents over (None: nobody plays); their turns block a
        # worker thread, so a world with a player needs a ThreadRunner
        self.player = player
        self.learner = learner  # with memory in learn mode: each finished case teaches it
        # the run's suite (medsim.assemble.RunPlan.engine / .row): its engine on a case and its
        # cast, and its results row; default: the diagnostic consultation's
        self.engine = engine or (lambda case, sink, cast: Consultation(case, cast, config.consultation, sink))
        self.row = row or (lambda case, events: case_row(case, events, seed=config.seed, condition=config.condition,
                                                         events_file="", wall_s=0.0))
        self.runner = runner or InlineRunner()
        self.log = log  # an EventLog-like object with emit(event, **context), or None
        self.extra_sink = sink
        self._check_map()
        self.seed: int | None = None  # call reset(seed) before step()

    # -- setup ------------------------------------------------------------------
    def _check_map(self) -> None:
        m = self.map
        self.router = self.config.test_rooms or OrderRouter.from_map(m)
        # the staff who answer orders (the technician, a registered nurse): each waits at its home point
        self.staff = {r.name: r.world for r in roles_of_kind(STAFF) if r.world is not None}
        need = ["entrance_spawn", "reception_desk", "records_station", *(p.home for p in self.staff.values()),
                *(s.name for s in self.router.stations if not s.bedside)]
        for name in need:
            m.point(name)
        self.consult_rooms = sorted({p.name.rsplit("_", 1)[0] for p in m.points_like("consult_")
                                     if p.name.endswith("_doctor")})
        for r in self.consult_rooms:
            m.point(f"{r}_doctor"), m.point(f"{r}_patient")
        if not self.consult_rooms:
            raise MapError(f"{m.path}: no consultation seats (points consult_N_doctor / consult_N_patient)")

    def reset(self, seed: int, *, case_order: list[int] | None = None) -> None:
        """Start the shift again. Patients get cases in a seeded random order, or in
        ``case_order`` (indices into ``cases``; replay uses the logged order)."""
        self.seed = seed
        self.rng = random.Random(seed)
        self.t = 0.0
        self.actors: dict[str, Actor] = {}
        self.encounters: list[Encounter] = []
        self.notices: list[Notice] = []
        self.images: list[Notice] = []  # images returned (model threads add them; the step publishes them)
        self.finished: list[dict[str, Any]] = []  # results rows, as the bench writes them
        self._arrivals = 0
        self._looks: dict[tuple[str | None, str | None], int] = {}
        self.controlled: str | None = None  # the agent a person controls
        self._room_busy: dict[str, str | None] = {r: None for r in self.consult_rooms}
        self._path_cache: dict[tuple[Tile, Tile], list[Tile]] = {}
        spawns = [p for p in self.map.points_like("doctor_spawn")] or [self.map.point("technician_spawn")]
        for i in range(self.config.doctors):
            sp = spawns[i % len(spawns)].tile
            self._spawn(Actor(f"doctor-{i + 1}", "doctor", DOCTOR_SPRITES[i % len(DOCTOR_SPRITES)], sp))
        for role, presence in self.staff.items():
            actor = _staff_id(role, presence)
            self._spawn(Actor(actor, actor, presence.sprite, self.map.point(presence.home).tile))
        order = list(range(len(self.cases)))
        self.rng.shuffle(order)
        self._case_order = list(case_order) if case_order is not None else order

    # -- events -----------------------------------------------------------------
    def _emit(self, event: Event, case_id: str | None = None) -> None:
        ctx = {"t": round(self.t, 3)}
        if case_id is not None:
            ctx["case_id"] = case_id
        if self.log is not None:
            self.log.emit(event, **ctx)
        if self.extra_sink is not None:
            self.extra_sink.emit(event)

    def _spawn(self, a: Actor) -> None:
        self.actors[a.id] = a
        self._emit(Spawned(actor=a.id, role=a.role, sprite=a.sprite, x=a.tile.x, y=a.tile.y), case_id=a.case_id)

    # -- a person in control ------------------------------------------------------
    def _cast_for(self, enc: Encounter) -> dict[str, Any]:
        """The consultation's cast; with a player, each role can be taken over at any turn."""
        assert enc.sink is not None
        cast = dict(self.cast(enc.case, enc.sink))
        if self.player is not None:
            io = self.player.for_case(enc.case.id)
            for role in [r for r in cast if r in role_names() and get_role(r).playable]:
                cast[role] = Switchable(role, cast[role], HumanParticipant(role, io),
                                        lambda cid=enc.case.id, r=role: self.is_controlled(cid, r))
        return cast

    def actor_for(self, case_id: str, role: str) -> str | None:
        """The agent that plays ``role`` in a case's consultation."""
        enc = next((e for e in self.encounters if e.case.id == case_id), None)
        if enc is None:
            return None
        if role == "doctor":
            return enc.doctor.id if enc.doctor else None
        if role == "patient":
            return enc.patient.id
        if role in self.staff:
            return enc.technician.id if enc.technician else _staff_id(role, self.staff[role])
        return None

    def _staff_actors(self) -> tuple[str, ...]:
        return tuple(_staff_id(r, p) for r, p in self.staff.items())

    def is_controlled(self, case_id: str, role: str) -> bool:
        c = self.controlled
        return c is not None and self.actor_for(case_id, role) == c

    def activity(self, enc: Encounter, *, progress: bool = True) -> str | None:
        """What the consultation is doing while none of its lines is being said: who walks
        where, who the model is answering for (a call started early is named beside the
        step on screen). None while a line shows and nothing runs behind it. Read from the
        encounter's phase and its model call; nothing is invented. ``progress``: with how
        far its model call has got (:meth:`call_progress`)."""
        doc = enc.doctor.id if enc.doctor else "the doctor"
        pid, room = enc.patient.id, (enc.room or "the room").replace("_", " ")
        test, tech = enc.order or "the test", (enc.technician.id if enc.technician else "the technician")
        judging = "the judge reads the diagnosis" if self.scorers else "the diagnosis is recorded"  # (a study: no judge yet)
        now = {
            Phase.CHECKIN: f"{pid} walks to reception",
            Phase.CHECKIN_WAIT: f"{pid} checks in",
            Phase.WAITING: f"{pid} waits for a doctor and a room",
            Phase.GATHERING: f"{doc} and {pid} walk to {room}",
            # a turn a person takes is theirs to think, not the model's
            Phase.DOCTOR: f"{doc} waits for you" if self.is_controlled(enc.case.id, "doctor") else f"{doc} is thinking",
            Phase.REPLY: f"{pid} waits for you" if self.is_controlled(enc.case.id, "patient") else f"{pid} is answering",
            Phase.TO_TEST: f"{tech} walks to the bedside for {test}" if enc.bedside else f"{pid} goes for {test}",
            Phase.AT_TEST: f"{tech} does {test}",
            Phase.FROM_TEST: f"{pid} walks back to {room}",
            Phase.TRIP: f"{doc} walks to {enc.doctor.purpose}" if enc.doctor and enc.doctor.purpose else "",
            Phase.TRIP_BACK: f"{doc} walks back to {pid}",
            Phase.JUDGING: judging,
            Phase.FILING: f"{doc} files the case",
        }.get(enc.phase, "")  # the speaking phases: the bubble says it
        behind = {Phase.DOCTOR: f"{doc} thinks ahead", Phase.REPLY: f"{pid} thinks of an answer",
                  Phase.AT_TEST: "the result is being read", Phase.JUDGING: judging}
        if enc.ahead in behind and enc.ahead is not enc.phase and enc.task is not None and not enc.task.done():
            now = f"{now}; {behind[enc.ahead]}" if now else behind[enc.ahead]
        how = self.call_progress(enc) if progress and now else None
        return f"{now}: {how}" if how else now or None

    def call_progress(self, enc: Encounter) -> str | None:
        """How far the encounter's model call running now has got, as its backend reports
        it (an in-process model: :mod:`agents.llm.progress`): in line behind another call
        (named), reading its prompt (tokens done of those to read), writing (tokens so
        far); "call 2" for the second call of the step (a guard that asked again, a panel's
        next member). Token counts only, never the text: a reply
        a guard refuses is never shown. None when nothing is reported."""
        if enc.task is None or enc.task.done():
            return None
        w = enc.watch.snapshot()
        again = f" (call {w['calls']})" if w["calls"] > 1 else ""
        if w["state"] == "waiting":
            h = w["holder"]
            if h is None or h.case_id == enc.case.id:
                return "in line for the model"
            return f"in line for the model, which {self._who(h)}"
        if w["state"] == "reading" and w["total"]:
            return f"reading {w['done']} of {w['total']} tokens{again}"
        if w["state"] == "writing":
            return f"writing, {w['tokens']} tokens{again}"
        return None

    def _who(self, ctx: Any) -> str:
        """The call that has the model, as the panel names it."""
        actor = self.actor_for(ctx.case_id, ctx.role)
        if actor is not None:
            return f"answers for {actor}"
        patient = self.actor_for(ctx.case_id, "patient")
        role = "the judge" if ctx.role == "judge" else f"the {ctx.role}"
        return f"{role} has for {patient}'s case" if patient else f"{role} has"

    def take_control(self, actor_id: str) -> None:
        """A person takes an agent over: its next turn (in any consultation) is theirs."""
        if self.player is None:
            raise RuntimeError("this world has no player (build it with a PlayerIO)")
        a = self.actors.get(actor_id)
        arriving = (a is None and actor_id.startswith("patient-") and actor_id[8:].isdigit()
                    and self._arrivals < int(actor_id[8:]) <= self.config.patients)  # still to arrive
        if not arriving and (a is None or not a.present or a.role not in ("doctor", "patient", *self._staff_actors())):
            raise ValueError(f"no agent '{actor_id}' to take over")
        if self.controlled == actor_id:
            return
        if self.controlled is not None:
            self.release_control()
        self.controlled = actor_id
        self._emit(ControlChanged(actor=actor_id, controller="human"), case_id=a.case_id if a else None)

    def release_control(self) -> None:
        """Hand the agent back to the AI; a turn the person was asked for goes to the AI."""
        actor_id, self.controlled = self.controlled, None
        if actor_id is None:
            return
        if self.player is not None:
            for req in self.player.pending():
                if self.actor_for(req.case_id, req.role) == actor_id:
                    self.player.hand_back(req.case_id, req.role)
        a = self.actors.get(actor_id)
        self._emit(ControlChanged(actor=actor_id, controller="ai"), case_id=a.case_id if a else None)

    def free_to_walk(self, actor_id: str) -> bool:
        """A person may walk their agent when the world does not need it somewhere: when
        it is their turn, or the agent has nothing to do (a doctor or the technician
        between cases, a patient in the waiting room)."""
        a = self.actors.get(actor_id)
        if a is None or not a.present or a.moving:
            return False
        if self.requests_for_player():
            return True
        if a.role == "doctor" or a.role in self._staff_actors():
            return a.case_id is None
        enc = next((e for e in self.encounters if e.patient is a), None)
        return enc is not None and enc.phase is Phase.WAITING

    def step_player(self, dx: int, dy: int) -> bool:
        """Walk the agent a person controls one tile (collision from the map). False when
        it may not walk now or the tile is blocked."""
        if self.controlled is None or not self.free_to_walk(self.controlled):
            return False
        a = self.actors[self.controlled]
        goal = Tile(a.tile.x + dx, a.tile.y + dy)
        if not self.map.walkable(goal):
            a.facing = "right" if dx > 0 else "left" if dx < 0 else "down" if dy > 0 else "up"
            return False
        self.walk(a, goal, "walk (a person)")
        return True

    def near(self, a_id: str, b_id: str, tiles: int = 2) -> bool:
        """Within ``tiles`` steps of each other (king moves), e.g. to talk."""
        a, b = self.actors.get(a_id), self.actors.get(b_id)
        return a is not None and b is not None and max(abs(a.tile.x - b.tile.x), abs(a.tile.y - b.tile.y)) <= tiles

    def requests_for_player(self) -> list[Any]:
        """What the world waits for the person to answer, for the agent they control."""
        if self.player is None or self.controlled is None:
            return []
        return [r for r in self.player.pending() if self.actor_for(r.case_id, r.role) == self.controlled]

    # -- movement ---------------------------------------------------------------
    def path(self, a: Tile, b: Tile) -> list[Tile]:
        key = (a, b)
        if key not in self._path_cache:
            self._path_cache[key] = astar(a, b, self.map.walkable)
        return self._path_cache[key]

    def walk(self, actor: Actor, goal: Tile, purpose: str) -> None:
        try:
            route = self.path(actor.tile, goal)
        except NoPath as e:
            raise MapError(f"{self.map.path}: {actor.id} cannot walk to {tuple(goal)} ({purpose}): {e}") from e
        actor.path = route[1:]
        actor.progress = 0.0
        actor.purpose = purpose
        actor.state = "walking" if actor.path else actor.state
        room = self.map.room_at(goal)
        self._emit(MoveStarted(actor=actor.id, purpose=purpose, x=actor.tile.x, y=actor.tile.y,
                               to_x=goal.x, to_y=goal.y, to_room=room.name if room else None,
                               steps=len(actor.path)), case_id=actor.case_id)
        if not actor.path:
            self._arrive(actor)

    def _arrive(self, actor: Actor) -> None:
        room = self.map.room_at(actor.tile)
        actor.state = "idle" if actor.role != "patient" else "waiting"
        self._emit(Arrived(actor=actor.id, purpose=actor.purpose, x=actor.tile.x, y=actor.tile.y,
                           room=room.name if room else None, address=room.address if room else None),
                   case_id=actor.case_id)

    def _move_actors(self, dt: float) -> None:
        for actor in sorted(self.actors.values(), key=lambda a: a.id):
            if not actor.path:
                continue
            budget = self.config.walk_speed * dt
            while budget > 0 and actor.path:
                nxt = actor.path[0]
                dx, dy = nxt.x - actor.tile.x, nxt.y - actor.tile.y
                actor.facing = "right" if dx > 0 else "left" if dx < 0 else "down" if dy > 0 else "up"
                step = min(budget, 1.0 - actor.progress)
                actor.progress += step
                budget -= step
                if actor.progress >= 1.0 - 1e-9:
                    actor.tile = actor.path.pop(0)
                    actor.progress = 0.0
                    actor.walked += 1
            if not actor.path:
                self._arrive(actor)

    # -- the shift --------------------------------------------------------------
    @property
    def done(self) -> bool:
        return (self._arrivals >= self.config.patients
                and all(e.phase is Phase.DONE for e in self.encounters)
                and not any(a.moving for a in self.actors.values()))

    def step(self, dt: float) -> None:
        """Advance the world by ``dt`` simulated seconds."""
        if self.seed is None:
            raise RuntimeError("World.reset(seed) must be called before step()")
        if self.done:
            return
        self.t += dt
        while self.images:  # images a model thread returned: popups now, on the world's clock
            n = self.images.pop(0)
            self.notices.append(Notice(self.t, n.kind, n.case_id, n.title, n.text, n.image))
        self._arrive_patients()
        self._move_actors(dt)
        for enc in list(self.encounters):
            self._advance(enc)
        self._assign_doctors()
        for a in self.actors.values():
            if a.speech and self.t >= a.speech_until:
                a.speech = None
        if self.done:
            s = self.stats()
            self._emit(ShiftFinished(patients=s["patients"], diagnosed=s["diagnosed"], correct=s["correct"],
                                     errors=s["errors"], failed=s["failed"]))

    def run(self, dt: float = 0.25, max_sim_s: float = 36000.0,
            on_step: Callable[["World"], None] | None = None) -> None:
        while not self.done and self.t < max_sim_s:
            self.step(dt)
            if on_step:
                on_step(self)

    def stats(self) -> dict[str, Any]:
        """The bench's summary of the finished consultations (failed ones and errors
        counted apart, never as wrong), plus the shift's own counts."""
        s = summarise(self.finished)
        s.update(patients=self._arrivals, seen=len(self.finished),
                 diagnosed=sum(1 for r in self.finished if r.get("diagnosis")))
        return s

    def _arrive_patients(self) -> None:
        while (self._arrivals < self.config.patients
               and self.t >= self._arrivals * self.config.arrival_interval_s):
            i = self._arrivals
            self._arrivals += 1
            case = self.cases[self._case_order[i % len(self.cases)]]
            # successive patients of one kind (sex, age band) get successive looks
            sex, age = parse_demographics(case.demographics)
            kind = (sex, age_band(age))
            look = self._looks.get(kind, 0)
            self._looks[kind] = look + 1
            p = Actor(f"patient-{i + 1}", "patient", patient_sprite(case.demographics, look, PATIENT_SPRITES),
                      self.map.point("entrance_spawn").tile, case_id=case.id)
            self._spawn(p)
            enc = Encounter(case=case, patient=p, phase=Phase.CHECKIN)
            self.encounters.append(enc)
            self.walk(p, self.map.point("reception_desk").tile, "check in at reception")

    def _free_waiting_tile(self, exclude: Actor) -> Tile:
        taken = {a.tile for a in self.actors.values() if a is not exclude and a.present} | \
                {a.path[-1] for a in self.actors.values() if a.path and a is not exclude}
        for seat in self.map.points_like("waiting_"):
            if seat.tile not in taken:
                return seat.tile
        room = self.map.rooms_like("waiting")[0]
        cells = [c for c in room.rect.cells() if self.map.walkable(c) and c not in taken]
        return self.rng.choice(cells) if cells else self.map.point("reception_desk").tile

    def _assign_doctors(self) -> None:
        """A free doctor and a free room go to the first patient without them: one in the
        waiting room (seated), or one just come in and checking in. A patient assigned at
        check-in goes from the desk straight to the room, where the doctor is already on
        the way; and the doctor's first turn, thought out from then on, has the check-in's
        time too (a model's first call evaluates the whole system prompt: some 20 s on
        the one core the window leaves it)."""
        for enc in self.encounters:
            if enc.doctor is not None or enc.phase not in (Phase.CHECKIN, Phase.CHECKIN_WAIT, Phase.WAITING):
                continue
            if enc.phase is Phase.WAITING and enc.patient.moving:
                continue
            doctor = next((a for a in sorted(self.actors.values(), key=lambda a: a.id)
                           if a.role == "doctor" and a.case_id is None and not a.moving), None)
            room = next((r for r in self.consult_rooms if self._room_busy[r] is None), None)
            if doctor is None or room is None:
                return
            self._room_busy[room] = enc.case.id
            doctor.case_id = enc.case.id
            enc.doctor, enc.room = doctor, room
            enc.doctor_seat = self.map.point(f"{room}_doctor").tile
            enc.patient_seat = self.map.point(f"{room}_patient").tile
            enc.started_t = self.t
            self._emit(EncounterStarted(doctor=doctor.id, patient=enc.patient.id, room=room), case_id=enc.case.id)
            self.walk(doctor, enc.doctor_seat, f"see {enc.patient.id} in {room}")
            if enc.phase is Phase.WAITING:
                self._call_in(enc)
            elif self._may_start_early(enc, "doctor"):  # still at the desk: the first turn starts now
                self._open_consultation(enc)
                self._next_doctor_call_early(enc)

    def _call_in(self, enc: Encounter) -> None:
        """The patient, assigned, walks to the room."""
        assert enc.patient_seat is not None and enc.room is not None
        enc.phase = Phase.GATHERING
        self.walk(enc.patient, enc.patient_seat, f"called to {enc.room}")

    def _say(self, actor: Actor, text: str) -> float:
        c = self.config
        dur = min(c.speech_max_s, max(c.speech_min_s, len(text) * c.speech_s_per_char))
        actor.speech = text
        actor.speech_until = self.t + dur
        actor.state = "talking"
        return dur

    def _task_ready(self, enc: Encounter) -> bool:
        return enc.task is not None and enc.task.done() and self.t - enc.task_started >= self.config.think_s

    def _submit(self, enc: Encounter, fn: Callable[[], Any], thinker: Actor) -> None:
        thinker.state = "thinking"
        enc.task = self.runner.submit(watched(enc.watch, fn))
        enc.task_started = self.t

    # A model call starts as soon as what it answers is known, while the world still shows
    # the step before (a bubble, a walk to the lab and back): the model's time and the
    # world's overlap instead of adding up. Not for a role a person plays: they are asked
    # when their turn comes on screen.
    def _may_start_early(self, enc: Encounter, role: str) -> bool:
        return not self.is_controlled(enc.case.id, role)

    def _start_early(self, enc: Encounter, phase: Phase, fn: Callable[[], Any]) -> None:
        """``fn``, the call of ``phase``, starts now; what it says is held until it is taken."""
        enc.ahead = phase
        if enc.sink is not None:
            enc.sink.held = []
        enc.task = self.runner.submit(watched(enc.watch, fn))
        enc.task_started = self.t

    def _next_doctor_call_early(self, enc: Encounter) -> None:
        """The doctor's next turn (or the scoring, when the consultation is over) starts
        now; the encounter enters its phase when the step on screen ends."""
        assert enc.consultation is not None
        if enc.task is not None or not self._may_start_early(enc, "doctor"):
            return
        if enc.consultation.done:
            self._start_early(enc, Phase.JUDGING, lambda: self._judge(enc))
        else:
            self._start_early(enc, Phase.DOCTOR, enc.consultation.doctor_turn)

    def _enter_doctor_call(self, enc: Encounter) -> None:
        """The step on screen has ended: the doctor's call (started early or now)."""
        assert enc.doctor is not None
        if enc.ahead is not None:
            enc.phase, enc.ahead = enc.ahead, None
            enc.doctor.state = "thinking"
        else:
            self._start_doctor_turn(enc)

    def _take(self, enc: Encounter) -> Any:
        task, enc.task = enc.task, None
        assert task is not None
        if enc.sink is not None:
            enc.sink.release()  # a call started early: what it said is shown now
        return task.result()

    def _advance(self, enc: Encounter) -> None:
        getattr(self, f"_on_{enc.phase.value}")(enc)

    # -- one handler per phase, in the order of a visit -----------------------------
    def _on_checkin(self, enc: Encounter) -> None:
        if not enc.patient.moving:
            enc.phase = Phase.CHECKIN_WAIT
            enc.timer = self.t + self.config.checkin_s

    def _on_checkin_wait(self, enc: Encounter) -> None:
        if self.t < enc.timer:
            return
        if enc.doctor is not None:  # assigned at the desk: straight to the room
            self._call_in(enc)
            return
        enc.phase = Phase.WAITING
        self.walk(enc.patient, self._free_waiting_tile(enc.patient), "wait to be called")

    def _on_waiting(self, enc: Encounter) -> None:
        pass  # _assign_doctors calls the patient in

    def _on_gathering(self, enc: Encounter) -> None:
        if enc.consultation is None and enc.doctor and self._may_start_early(enc, "doctor"):
            self._open_consultation(enc)  # the doctor's first turn is thought out on the way to the room
            self._next_doctor_call_early(enc)
        if enc.doctor and not enc.doctor.moving and not enc.patient.moving:
            if enc.consultation is None:
                self._open_consultation(enc)
            enc.doctor.facing = ("down" if enc.patient_seat and enc.doctor_seat and enc.patient_seat.y > enc.doctor_seat.y
                                 else "left")
            self._enter_doctor_call(enc)

    def _open_consultation(self, enc: Encounter) -> None:
        enc.sink = _CaseSink(self, enc.case.id)
        try:
            enc.consultation = self.engine(enc.case, enc.sink, cast=self._cast_for(enc))
        except Exception as e:  # noqa: BLE001 - a cast that cannot be built is this case's error
            enc.consultation = Consultation(enc.case, _Absent.cast(), self.config.consultation, enc.sink)
            enc.consultation.fail(f"internal error: {type(e).__name__}: {e}")

    def _on_doctor(self, enc: Encounter) -> None:
        if not self._task_ready(enc):
            return
        pending = self._take(enc)
        assert enc.doctor is not None
        if pending is None:  # done (turn limit) or the turn failed
            self._start_judging(enc)
            return
        trips = self._trips(enc)
        if trips:
            enc.held, enc.trips = pending, trips
            self._next_trip(enc)
            return
        self._deliver(enc, pending)

    def _spot(self, point: str, room: str) -> Tile | None:
        """A named point, else a free cell of the room (maps without the point)."""
        if point in self.map.points:
            return self.map.point(point).tile
        rooms = self.map.rooms_like(room)
        cells = [c for r in rooms for c in r.rect.cells() if self.map.walkable(c)]
        return cells[len(cells) // 2] if cells else None

    def _trips(self, enc: Encounter) -> list[tuple[str, Tile, list[str]]]:
        """Where the doctor goes before announcing: the records room when it consulted
        past cases, the conference room when a panel deliberated."""
        sink = enc.sink
        if sink is None:
            return []
        out: list[tuple[str, Tile, list[str]]] = []
        records = self._spot("records_station", "records")
        if sink.recalled is not None and records is not None:
            hits = sink.recalled
            found = [f"{h['diagnosis']} ({h['score']:.2f})" for h in hits if h["buffer"] == "records" and h.get("diagnosis")]
            lessons = [h["insight"] for h in hits if h["buffer"] == "experience" and h.get("insight")]
            out.append(("consult past cases", records,
                        [("Past cases: " + "; ".join(found[:3])) if found else "No similar past case"]
                        + [f"Lesson: {x}" for x in lessons[:1]]))
        conference = self._spot("conference_1", "conference")
        if sink.panel and conference is not None:
            out.append(("meet the panel", conference, list(sink.panel)))
        sink.recalled, sink.panel = None, []
        return out

    def _next_trip(self, enc: Encounter) -> None:
        assert enc.doctor is not None
        what, where, lines = enc.trips.pop(0)
        enc.lines = list(lines)
        enc.phase = Phase.TRIP
        self.walk(enc.doctor, where, f"{what} for {enc.case.id}")

    def _deliver(self, enc: Encounter, pending: Any) -> None:
        """The doctor says its turn; a test sends the patient on a trip."""
        assert enc.doctor is not None
        enc.timer = self.t + self._say(enc.doctor, pending.spoken)
        a = pending.action
        if a.kind == "test" and not pending.premature:
            route = self.router.route(a.text)
            enc.phase = Phase.TO_TEST
            self._start_test_trip(enc, a.text, route.station, route.bedside)
            c = enc.consultation
            assert c is not None
            if self._may_start_early(enc, c.staff_for(a.text)):  # the result is read at the machine
                self._start_early(enc, Phase.AT_TEST, c.answer)
        else:
            enc.phase = Phase.DOCTOR_SPEAKING
            if a.kind == "ask" and self._may_start_early(enc, "patient"):  # the patient answers after the bubble
                self._start_early(enc, Phase.REPLY, enc.consultation.answer)  # type: ignore[union-attr]

    def _on_trip(self, enc: Encounter) -> None:
        assert enc.doctor is not None
        if not enc.doctor.moving:
            enc.phase = Phase.TRIP_TALK
            enc.timer = self.t

    def _on_trip_talk(self, enc: Encounter) -> None:
        assert enc.doctor is not None and enc.doctor_seat is not None
        if self.t < enc.timer:
            return
        if enc.lines:
            enc.timer = self.t + self._say(enc.doctor, enc.lines.pop(0))
        elif enc.trips:
            self._next_trip(enc)
        else:
            enc.phase = Phase.TRIP_BACK
            self.walk(enc.doctor, enc.doctor_seat, f"back to {enc.patient.id}")

    def _on_trip_back(self, enc: Encounter) -> None:
        assert enc.doctor is not None
        if enc.doctor.moving:
            return
        pending, enc.held = enc.held, None
        self._deliver(enc, pending)

    def _on_doctor_speaking(self, enc: Encounter) -> None:
        if self.t < enc.timer:
            return
        c = enc.consultation
        assert c is not None
        pend = c.pending
        thinker = enc.patient if pend and pend.action.kind == "ask" else enc.doctor
        enc.phase = Phase.REPLY
        if enc.ahead is Phase.REPLY:
            enc.ahead = None
            thinker.state = "thinking"  # type: ignore[union-attr]
        else:
            self._submit(enc, c.answer, thinker)  # type: ignore[arg-type]

    def _on_reply(self, enc: Encounter) -> None:
        if not self._task_ready(enc):
            return
        rec = self._take(enc)
        c = enc.consultation
        assert c is not None
        if rec is None or c.done:
            self._start_judging(enc)
            return
        enc.timer = self.t + self._say(enc.patient, rec.reply_text) if rec.reply_text else self.t
        enc.phase = Phase.REPLY_SPEAKING
        self._next_doctor_call_early(enc)

    def _on_reply_speaking(self, enc: Encounter) -> None:
        if self.t >= enc.timer:
            enc.patient.state = "waiting"
            self._enter_doctor_call(enc)

    def _on_to_test(self, enc: Encounter) -> None:
        walker = enc.technician if enc.bedside else enc.patient
        if enc.technician is None:
            self._claim_technician(enc)
        elif walker is not None and not walker.moving and not enc.technician.moving:
            enc.phase = Phase.AT_TEST
            enc.timer = self.t + self.config.test_s

    def _on_at_test(self, enc: Encounter) -> None:
        c = enc.consultation
        assert c is not None and enc.technician is not None
        if self.t < enc.timer:
            return  # at the machine
        if enc.task is None:
            self._submit(enc, c.answer, enc.technician)
            return
        if enc.ahead is Phase.AT_TEST:
            enc.ahead = None
            enc.technician.state = "thinking"
        if not self._task_ready(enc):
            return
        rec = self._take(enc)
        if rec is None:
            self._release_technician(enc)
            self._start_judging(enc)
            return
        self._say(enc.technician, rec.reply_text or "")
        self.notices.append(Notice(self.t, "test_result", enc.case.id, f"{rec.action.text} ({enc.case.id})",
                                   rec.reply_text or ""))
        enc.phase = Phase.FROM_TEST
        if not enc.bedside:
            assert enc.patient_seat is not None
            self.walk(enc.patient, enc.patient_seat, "back from the test")
        self._release_technician(enc)
        self._next_doctor_call_early(enc)  # while the patient walks back

    def _on_from_test(self, enc: Encounter) -> None:
        if not enc.patient.moving:
            self._enter_doctor_call(enc)

    def _on_judging(self, enc: Encounter) -> None:
        if not self._task_ready(enc):
            return
        row: dict[str, Any] = self._take(enc)
        enc.result = row
        enc.judged_t = self.t
        self.finished.append(row)
        assert enc.doctor is not None
        # a row with no verdict (a reader study's, judged when it ends) is only recorded, its key unnamed
        verdict = ("error" if row["error"] else "failed" if row["status"] == "failed"
                   else "recorded" if row.get("correct") is None else "correct" if row["correct"] else "wrong")
        key = f" (answer key: {row['truth']})" if row.get("truth") and row.get("correct") is not None else ""
        self.notices.append(Notice(self.t, "diagnosis", enc.case.id, f"Diagnosis {enc.case.id}: {verdict}",
                                   f"{row['diagnosis'] or 'none given'}{key}"))
        enc.phase = Phase.FILING
        self.walk(enc.doctor, self.map.point("records_station").tile, f"file {enc.case.id}")
        self.walk(enc.patient, self.map.point("entrance_exit").tile if "entrance_exit" in self.map.points
                  else self.map.point("entrance_spawn").tile, "leave the hospital")
        if enc.room:
            self._room_busy[enc.room] = None

    def _on_filing(self, enc: Encounter) -> None:
        assert enc.doctor is not None
        if not enc.doctor.moving and enc.doctor.case_id == enc.case.id and enc.doctor.purpose.startswith("file"):
            room = self.map.room_at(enc.doctor.tile)
            self._emit(CaseFiled(doctor=enc.doctor.id, room=room.name if room else "records"), case_id=enc.case.id)
            enc.doctor.case_id = None
            idx = int(enc.doctor.id.split("-")[1]) - 1
            spawns = self.map.points_like("doctor_spawn")
            if spawns:
                self.walk(enc.doctor, spawns[idx % len(spawns)].tile, "back to the staff area")
        if not enc.patient.moving and enc.patient.present and enc.patient.purpose == "leave the hospital":
            enc.patient.present = False
            self._emit(PatientLeft(patient=enc.patient.id), case_id=enc.case.id)
        if enc.doctor.case_id is None and not enc.patient.present:
            enc.phase = Phase.DONE

    def _on_done(self, enc: Encounter) -> None:
        pass

    def _judge(self, enc: Encounter) -> dict[str, Any]:
        """Close the consultation, score it over its events, build its results row
        (a worker-thread task: the judge is a model call)."""
        c, sink = enc.consultation, enc.sink
        assert c is not None and sink is not None
        c.finish()
        try:
            score_case(enc.case, Transcript.from_events(sink.events, case_id=enc.case.id), self.scorers, sink)
        except Exception as e:  # noqa: BLE001 - recorded as the case's error, the shift goes on
            from agents.events import Scored
            sink.emit(Scored(scorer="diagnosis", value=None,
                             details={"error": f"internal error in scoring: {type(e).__name__}: {e}"}))
        if self.learner is not None:
            try:
                self.learner.learn(enc.case, sink.events, sink)
            except Exception as e:  # noqa: BLE001 - learning that breaks must not lose the case
                from agents.events import MemoryLearned
                sink.emit(MemoryLearned(action="nothing", buffer=None, record_id=None,
                                        reason=f"internal error in learning: {type(e).__name__}: {e}"))
        return self.row(enc.case, sink.events)

    def _start_doctor_turn(self, enc: Encounter) -> None:
        assert enc.consultation is not None and enc.doctor is not None
        if enc.consultation.done:
            self._start_judging(enc)
            return
        enc.phase = Phase.DOCTOR
        self._submit(enc, enc.consultation.doctor_turn, enc.doctor)

    def _start_judging(self, enc: Encounter) -> None:
        assert enc.consultation is not None and enc.doctor is not None
        enc.phase = Phase.JUDGING
        self._submit(enc, lambda: self._judge(enc), enc.doctor)

    def _start_test_trip(self, enc: Encounter, test: str, station: str, bedside: bool) -> None:
        enc.test_station, enc.bedside, enc.order = station, bedside, test
        if enc.doctor is not None:
            enc.doctor.state = "waiting"
        enc.technician = None
        self._claim_technician(enc)

    def _claim_technician(self, enc: Encounter) -> None:
        """The staff member who answers the pending order (the technician, or the role the
        consultation sends it to: a nurse for vital signs) walks to do it, when free."""
        assert enc.consultation is not None and enc.order is not None
        role = enc.consultation.staff_for(enc.order)
        presence = self.staff.get(role) or self.staff.get(TECHNICIAN)
        tech = self.actors[_staff_id(role if role in self.staff else TECHNICIAN, presence)]
        if tech.case_id is not None or tech.moving:
            return  # busy: the encounter waits in "to_test"
        tech.case_id = enc.case.id
        enc.technician = tech
        assert enc.room
        test = enc.order
        if enc.bedside:
            goal = self._bedside_tile(enc)
            room = enc.room
        else:
            goal = self.map.point(enc.test_station or "lab_station").tile
            room_obj = self.map.room_at(goal)
            room = room_obj.name if room_obj else "?"
            self.walk(enc.patient, goal, f"go for {test}")
            # the technician meets the patient there
            goal = self._beside(goal)
        self._emit(TestTrip(test=test, room=room, station=enc.test_station or "", bedside=enc.bedside),
                   case_id=enc.case.id)
        self.walk(tech, goal, f"do {test}")

    def _release_technician(self, enc: Encounter) -> None:
        tech = enc.technician
        if tech is None:
            return
        tech.case_id = None
        enc.technician = None
        home = next((p.home for r, p in self.staff.items() if _staff_id(r, p) == tech.id), "technician_spawn")
        self.walk(tech, self.map.point(home).tile, "back to the lab")

    def _beside(self, t: Tile) -> Tile:
        for nb in t.neighbours4():
            if self.map.walkable(nb):
                return nb
        return t

    def _bedside_tile(self, enc: Encounter) -> Tile:
        assert enc.patient_seat is not None
        for nb in enc.patient_seat.neighbours4():
            if self.map.walkable(nb) and nb != enc.doctor_seat:
                return nb
        return enc.patient_seat


def _staff_id(role: str, presence: Any) -> str:
    """A staff role's actor in the world (``technician`` for the measurement role)."""
    return presence.actor or flag_name(role)


class _Absent:
    """Stands in for a cast that could not be built (the consultation is ended as an
    error before anyone is asked for a turn)."""

    role = "absent"

    def act(self, obs: object) -> object:  # pragma: no cover - never asked
        raise RuntimeError("no participant")

    @classmethod
    def cast(cls) -> dict[str, Any]:
        return {"doctor": cls(), "patient": cls(), "measurement": cls()}
