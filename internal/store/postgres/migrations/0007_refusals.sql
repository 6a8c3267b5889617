-- The texts a space's model refused as too long for it (embed.Refused), by
-- vector key, with the provider's reason: no process sends them to that
-- model again (Store.Refusals), where each process remembered them for its
-- own life and a restart, or every `recall repair`, sent each once more. A
-- text that changes has another key, another model another space. A row
-- goes with its space, with the last chunk holding its key, and with
-- `recall repair --retry-refused` (Store.ForgetRefusals).
CREATE TABLE refusals (
	space  text COLLATE "C" NOT NULL REFERENCES spaces (name) ON DELETE CASCADE,
	vkey   text COLLATE "C" NOT NULL,
	reason text NOT NULL,
	at     bigint NOT NULL, -- unix nanoseconds, UTC
	PRIMARY KEY (vkey, space)
);
