"""Running bimine's stages on a Ray cluster (the ``ray`` extra): the local path stays the
default and needs no Ray; the output of a Ray run is the same bytes as a local run's."""
