"""Participants: the doctor, patient, technician (and later a human, a reflector, panel
members, a vision reader) behind one small interface, ``act(Observation) -> Turn``."""
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
