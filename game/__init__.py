"""medsim game: the hospital world (the map model, A*, the shift in ``game.world``, test
orders routed to rooms, the runner that keeps model calls off the render loop, a person's
control of an agent) and, in ``game.view``, the pygame shell. The consultations the world
runs are the engine's (``agents.consultation``), the same as ``medsim bench``'s. Nothing
outside ``game.view`` imports pygame, and nothing here imports ``medsim``."""
