"""Other programs' model files, both ways (docs/import.md).

- :mod:`.common`: what import and export share -- the refusal, the names given to the
  parts of a joint that MJCF writes as several elements, quaternion helpers;
- :mod:`.mjcf_import`: an MJCF or URDF file, compiled by MuJoCo, as a mechanism spec at
  the model's initial pose (``linkwork import``);
- :mod:`.mjcf_export`: a mechanism spec as MJCF text (``linkwork export --mjcf``), no
  MuJoCo needed;
- :mod:`.cli`: the two commands.

MuJoCo is an optional dependency (``pip install 'linkwork[import]'``), imported only
when a file is read.
"""
