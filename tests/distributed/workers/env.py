"""Prints what torchrun's variables are in this rank, and that the group agrees."""

import json
import os
import sys

import ember.distributed as dist

dist.init_process_group("gloo")
keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"]
env = {k: os.environ.get(k) for k in keys}
assert int(env["RANK"]) == dist.get_rank() and int(env["WORLD_SIZE"]) == dist.get_world_size()
# one write per line, so that the ranks' lines do not interleave
sys.stdout.write("ENV " + json.dumps({"env": env, "argv": sys.argv[1:]}) + "\n")
sys.stdout.flush()
