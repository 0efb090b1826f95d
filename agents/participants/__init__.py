"""Participants: whoever takes a turn (the doctor, patient, technician and vision reader)
behind one small interface, ``act(Observation) -> Turn``: a model (:class:`LLMParticipant`),
a script, a replayed log or a person (:class:`HumanParticipant`; :class:`Switchable` lets a
person take a role over and hand it back), wrapped by guards and hints.

The diagnosis panel's members and the memory's reflector are not participants: they are
calls on the doctor's and the reflector's models, made by ``agents.deliberation`` and
``agents.learning``."""
from agents.participants.base import Observation, Participant, RoleFailure, Turn
from agents.participants.cast import Cast, CastBuilder, CastConfig, default_params, llm_cast
from agents.participants.human import HumanIO, HumanParticipant, InputEnded
from agents.participants.llm import LLMDoctor, LLMParticipant
from agents.participants.replayed import ReplayedParticipant
from agents.participants.scripted import ScriptedParticipant
from agents.participants.switch import Handback, Switchable
from agents.participants.wrappers import Guarded, Hinted

__all__ = ["Observation", "Participant", "RoleFailure", "Turn", "Cast", "CastBuilder", "CastConfig", "default_params",
           "llm_cast", "LLMDoctor", "LLMParticipant", "ReplayedParticipant", "ScriptedParticipant", "Guarded", "Hinted",
           "HumanIO", "HumanParticipant", "InputEnded", "Handback", "Switchable"]
