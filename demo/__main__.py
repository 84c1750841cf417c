"""``python -m demo``: what ``make run`` runs (:func:`demo.main`)."""

from demo import main

raise SystemExit(main())
