"""`python -m tests.kubesim serve|ctl ...`: the launcher (see launcher.py)."""

import sys

from tests.kubesim.launcher import main

sys.exit(main())
