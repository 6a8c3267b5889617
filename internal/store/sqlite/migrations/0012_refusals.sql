-- The texts a space's model refused as too long for it (embed.Refused), by
-- vector key, with the provider's reason: no process sends them to that
-- model again (Store.Refusals), where each process remembered them for its
-- own life and a restart, or every `recall repair`, sent each once more. A
-- text that changes has another key, another model another space. A row
-- goes with its space, with the last chunk holding its key, and with
-- `recall repair --retry-refused` (Store.ForgetRefusals).
CREATE TABLE refusals (
	space  TEXT NOT NULL REFERENCES spaces (name) ON DELETE CASCADE,
	vkey   TEXT NOT NULL,
	reason TEXT NOT NULL,
	at     INTEGER NOT NULL,
	PRIMARY KEY (vkey, space)
) WITHOUT ROWID;
