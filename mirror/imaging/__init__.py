"""Reading media files the way Philomena's media tools do: what a file is (``analyze``), a still
frame of it (``still_frame``) and its corner intensities (``intensities_of``), for uploads,
reverse search and the intensities the mirror keeps for its files."""

from .analyze import Analysis, MediaError, analyze
from .frames import still_frame
from .intensities import Intensities, intensities_of, intensities_of_picture

__all__ = ["Analysis", "MediaError", "analyze", "still_frame", "Intensities", "intensities_of",
           "intensities_of_picture"]
