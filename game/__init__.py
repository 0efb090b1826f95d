"""medsim game: the hospital world (map model, pathfinding, scheduler) and, in
``game.view``, the pygame shell. The world lands with the hospital-world issue; the
headless consultation engine it drives lives in ``agents.consultation``."""
