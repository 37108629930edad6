"""Following the site's firehose: a reader beside ``sync`` and ``dump``, feeding the store's writers.

:mod:`.phoenix` speaks the channel, :mod:`.apply` stores each event, :mod:`.run` keeps the
connection and catches up what it missed.
"""

from .apply import FollowScope
from .phoenix import FirehoseRefused
from .run import STATE_NAME, FollowOptions, FollowReport, follow

__all__ = ["FirehoseRefused", "FollowOptions", "FollowReport", "FollowScope", "STATE_NAME", "follow"]
