-- Digests published before the trust gate (012) were rendered without it:
-- a forged heading or an ungated handoff in one would be served until the
-- next batch of memories made it due. Forget them; the next read of each
-- workspace's digest publishes it anew, through the gate.
delete from digest_state;
