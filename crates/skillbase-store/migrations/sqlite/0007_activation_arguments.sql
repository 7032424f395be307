-- The arguments a skill was loaded with (JSON, secrets already redacted by the dispatcher), so
-- that re-attaching a skill after compaction (`pinned`) renders it as it was loaded.
ALTER TABLE activations ADD COLUMN arguments TEXT;
