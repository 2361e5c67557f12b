"""Composite keys on every tenant table, so that Citus can distribute each by `project_id`
(docs/scaling.md, "Citus: distributing by project"):

- the primary key becomes `(id, project_id)`: `id` first, so the key's btree still serves
  every lookup and join by id alone (`filter(pk=…)`, Django's foreign-key joins), and
  `project_id` in it, as Citus requires of a distributed table's unique constraints;
- every foreign key between two tenant tables becomes `(x_id, project_id) -> t(id,
  project_id)`: a row can only point at a row of its own project, which Citus then keeps on
  the same node. Django's single-column constraints were dropped by each app's migration
  (the fields are `db_constraint=False`); these are deferrable and deferred, as Django's
  were. A NULL `x_id` (an optional episode) is not checked (MATCH SIMPLE), as before.

`tenants_apikey` keeps its keys: it is a reference table (looked up by its prefix before the
project is known). This migration lives in the composition root because it spans the apps.
"""

from __future__ import annotations

from django.db import migrations

# Every tenant table but tenants_apikey: the primary key on (id, project_id).
PRIMARY_KEYS = """
ALTER TABLE analytics_searchstat
    DROP CONSTRAINT analytics_searchstat_pkey,
    ADD CONSTRAINT analytics_searchstat_pkey PRIMARY KEY (id, project_id);
ALTER TABLE analytics_toolfeedback
    DROP CONSTRAINT analytics_toolfeedback_pkey,
    ADD CONSTRAINT analytics_toolfeedback_pkey PRIMARY KEY (id, project_id);
ALTER TABLE documents_document
    DROP CONSTRAINT documents_document_pkey,
    ADD CONSTRAINT documents_document_pkey PRIMARY KEY (id, project_id);
ALTER TABLE documents_documentchunk
    DROP CONSTRAINT documents_documentchunk_pkey,
    ADD CONSTRAINT documents_documentchunk_pkey PRIMARY KEY (id, project_id);
ALTER TABLE documents_memoryref
    DROP CONSTRAINT documents_memoryref_pkey,
    ADD CONSTRAINT documents_memoryref_pkey PRIMARY KEY (id, project_id);
ALTER TABLE entities_entity
    DROP CONSTRAINT entities_entity_pkey,
    ADD CONSTRAINT entities_entity_pkey PRIMARY KEY (id, project_id);
ALTER TABLE entities_entitymemory
    DROP CONSTRAINT entities_entitymemory_pkey,
    ADD CONSTRAINT entities_entitymemory_pkey PRIMARY KEY (id, project_id);
ALTER TABLE entities_relation
    DROP CONSTRAINT entities_relation_pkey,
    ADD CONSTRAINT entities_relation_pkey PRIMARY KEY (id, project_id);
ALTER TABLE entities_tag
    DROP CONSTRAINT entities_tag_pkey,
    ADD CONSTRAINT entities_tag_pkey PRIMARY KEY (id, project_id);
ALTER TABLE memories_contradictionreview
    DROP CONSTRAINT memories_contradictionreview_pkey,
    ADD CONSTRAINT memories_contradictionreview_pkey PRIMARY KEY (id, project_id);
ALTER TABLE memories_episode
    DROP CONSTRAINT memories_episode_pkey,
    ADD CONSTRAINT memories_episode_pkey PRIMARY KEY (id, project_id);
ALTER TABLE memories_maintenancestate
    DROP CONSTRAINT memories_maintenancestate_pkey,
    ADD CONSTRAINT memories_maintenancestate_pkey PRIMARY KEY (id, project_id);
ALTER TABLE memories_memory
    DROP CONSTRAINT memories_memory_pkey,
    ADD CONSTRAINT memories_memory_pkey PRIMARY KEY (id, project_id);
ALTER TABLE memories_memoryarchive
    DROP CONSTRAINT memories_memoryarchive_pkey,
    ADD CONSTRAINT memories_memoryarchive_pkey PRIMARY KEY (memory_id, project_id);
ALTER TABLE memories_memoryfeedback
    DROP CONSTRAINT memories_memoryfeedback_pkey,
    ADD CONSTRAINT memories_memoryfeedback_pkey PRIMARY KEY (id, project_id);
ALTER TABLE memories_memoryhistory
    DROP CONSTRAINT memories_memoryhistory_pkey,
    ADD CONSTRAINT memories_memoryhistory_pkey PRIMARY KEY (id, project_id);
ALTER TABLE memories_memorylink
    DROP CONSTRAINT memories_memorylink_pkey,
    ADD CONSTRAINT memories_memorylink_pkey PRIMARY KEY (id, project_id);
ALTER TABLE memories_projectprompt
    DROP CONSTRAINT memories_projectprompt_pkey,
    ADD CONSTRAINT memories_projectprompt_pkey PRIMARY KEY (id, project_id);
ALTER TABLE memoryplatform_eventrecord
    DROP CONSTRAINT memoryplatform_eventrecord_pkey,
    ADD CONSTRAINT memoryplatform_eventrecord_pkey PRIMARY KEY (id, project_id);
ALTER TABLE portability_exportjob
    DROP CONSTRAINT portability_exportjob_pkey,
    ADD CONSTRAINT portability_exportjob_pkey PRIMARY KEY (id, project_id);
"""

# Every foreign key between two tenant tables: (x_id, project_id) -> t (id, project_id).
FOREIGN_KEYS = """
ALTER TABLE documents_document ADD CONSTRAINT documents_document_episode_id_project_fk
    FOREIGN KEY (episode_id, project_id) REFERENCES memories_episode (id, project_id)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE documents_documentchunk ADD CONSTRAINT documents_documentchunk_document_id_project_fk
    FOREIGN KEY (document_id, project_id) REFERENCES documents_document (id, project_id)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE documents_memoryref ADD CONSTRAINT documents_memoryref_chunk_id_project_fk
    FOREIGN KEY (chunk_id, project_id) REFERENCES documents_documentchunk (id, project_id)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE documents_memoryref ADD CONSTRAINT documents_memoryref_document_id_project_fk
    FOREIGN KEY (document_id, project_id) REFERENCES documents_document (id, project_id)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE documents_memoryref ADD CONSTRAINT documents_memoryref_memory_id_project_fk
    FOREIGN KEY (memory_id, project_id) REFERENCES memories_memory (id, project_id)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE entities_entitymemory ADD CONSTRAINT entities_entitymemory_entity_id_project_fk
    FOREIGN KEY (entity_id, project_id) REFERENCES entities_entity (id, project_id)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE entities_entitymemory ADD CONSTRAINT entities_entitymemory_memory_id_project_fk
    FOREIGN KEY (memory_id, project_id) REFERENCES memories_memory (id, project_id)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE entities_relation ADD CONSTRAINT entities_relation_source_id_project_fk
    FOREIGN KEY (source_id, project_id) REFERENCES entities_entity (id, project_id)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE entities_relation ADD CONSTRAINT entities_relation_target_id_project_fk
    FOREIGN KEY (target_id, project_id) REFERENCES entities_entity (id, project_id)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE memories_contradictionreview ADD CONSTRAINT memories_contradictionreview_memory_a_id_project_fk
    FOREIGN KEY (memory_a_id, project_id) REFERENCES memories_memory (id, project_id)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE memories_contradictionreview ADD CONSTRAINT memories_contradictionreview_memory_b_id_project_fk
    FOREIGN KEY (memory_b_id, project_id) REFERENCES memories_memory (id, project_id)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE memories_memory ADD CONSTRAINT memories_memory_episode_id_project_fk
    FOREIGN KEY (episode_id, project_id) REFERENCES memories_episode (id, project_id)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE memories_memoryarchive ADD CONSTRAINT memories_memoryarchive_memory_id_project_fk
    FOREIGN KEY (memory_id, project_id) REFERENCES memories_memory (id, project_id)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE memories_memoryfeedback ADD CONSTRAINT memories_memoryfeedback_memory_id_project_fk
    FOREIGN KEY (memory_id, project_id) REFERENCES memories_memory (id, project_id)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE memories_memoryhistory ADD CONSTRAINT memories_memoryhistory_memory_id_project_fk
    FOREIGN KEY (memory_id, project_id) REFERENCES memories_memory (id, project_id)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE memories_memorylink ADD CONSTRAINT memories_memorylink_from_memory_id_project_fk
    FOREIGN KEY (from_memory_id, project_id) REFERENCES memories_memory (id, project_id)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE memories_memorylink ADD CONSTRAINT memories_memorylink_to_memory_id_project_fk
    FOREIGN KEY (to_memory_id, project_id) REFERENCES memories_memory (id, project_id)
    DEFERRABLE INITIALLY DEFERRED;
"""

DROP_FOREIGN_KEYS = """
ALTER TABLE documents_document DROP CONSTRAINT documents_document_episode_id_project_fk;
ALTER TABLE documents_documentchunk DROP CONSTRAINT documents_documentchunk_document_id_project_fk;
ALTER TABLE documents_memoryref DROP CONSTRAINT documents_memoryref_chunk_id_project_fk;
ALTER TABLE documents_memoryref DROP CONSTRAINT documents_memoryref_document_id_project_fk;
ALTER TABLE documents_memoryref DROP CONSTRAINT documents_memoryref_memory_id_project_fk;
ALTER TABLE entities_entitymemory DROP CONSTRAINT entities_entitymemory_entity_id_project_fk;
ALTER TABLE entities_entitymemory DROP CONSTRAINT entities_entitymemory_memory_id_project_fk;
ALTER TABLE entities_relation DROP CONSTRAINT entities_relation_source_id_project_fk;
ALTER TABLE entities_relation DROP CONSTRAINT entities_relation_target_id_project_fk;
ALTER TABLE memories_contradictionreview DROP CONSTRAINT memories_contradictionreview_memory_a_id_project_fk;
ALTER TABLE memories_contradictionreview DROP CONSTRAINT memories_contradictionreview_memory_b_id_project_fk;
ALTER TABLE memories_memory DROP CONSTRAINT memories_memory_episode_id_project_fk;
ALTER TABLE memories_memoryarchive DROP CONSTRAINT memories_memoryarchive_memory_id_project_fk;
ALTER TABLE memories_memoryfeedback DROP CONSTRAINT memories_memoryfeedback_memory_id_project_fk;
ALTER TABLE memories_memoryhistory DROP CONSTRAINT memories_memoryhistory_memory_id_project_fk;
ALTER TABLE memories_memorylink DROP CONSTRAINT memories_memorylink_from_memory_id_project_fk;
ALTER TABLE memories_memorylink DROP CONSTRAINT memories_memorylink_to_memory_id_project_fk;
"""

# Back to primary keys on the id alone: the apps' migrations, reversed after this one, then
# put Django's single-column foreign keys back.
ID_PRIMARY_KEYS = """
ALTER TABLE analytics_searchstat
    DROP CONSTRAINT analytics_searchstat_pkey,
    ADD CONSTRAINT analytics_searchstat_pkey PRIMARY KEY (id);
ALTER TABLE analytics_toolfeedback
    DROP CONSTRAINT analytics_toolfeedback_pkey,
    ADD CONSTRAINT analytics_toolfeedback_pkey PRIMARY KEY (id);
ALTER TABLE documents_document
    DROP CONSTRAINT documents_document_pkey,
    ADD CONSTRAINT documents_document_pkey PRIMARY KEY (id);
ALTER TABLE documents_documentchunk
    DROP CONSTRAINT documents_documentchunk_pkey,
    ADD CONSTRAINT documents_documentchunk_pkey PRIMARY KEY (id);
ALTER TABLE documents_memoryref
    DROP CONSTRAINT documents_memoryref_pkey,
    ADD CONSTRAINT documents_memoryref_pkey PRIMARY KEY (id);
ALTER TABLE entities_entity
    DROP CONSTRAINT entities_entity_pkey,
    ADD CONSTRAINT entities_entity_pkey PRIMARY KEY (id);
ALTER TABLE entities_entitymemory
    DROP CONSTRAINT entities_entitymemory_pkey,
    ADD CONSTRAINT entities_entitymemory_pkey PRIMARY KEY (id);
ALTER TABLE entities_relation
    DROP CONSTRAINT entities_relation_pkey,
    ADD CONSTRAINT entities_relation_pkey PRIMARY KEY (id);
ALTER TABLE entities_tag
    DROP CONSTRAINT entities_tag_pkey,
    ADD CONSTRAINT entities_tag_pkey PRIMARY KEY (id);
ALTER TABLE memories_contradictionreview
    DROP CONSTRAINT memories_contradictionreview_pkey,
    ADD CONSTRAINT memories_contradictionreview_pkey PRIMARY KEY (id);
ALTER TABLE memories_episode
    DROP CONSTRAINT memories_episode_pkey,
    ADD CONSTRAINT memories_episode_pkey PRIMARY KEY (id);
ALTER TABLE memories_maintenancestate
    DROP CONSTRAINT memories_maintenancestate_pkey,
    ADD CONSTRAINT memories_maintenancestate_pkey PRIMARY KEY (id);
ALTER TABLE memories_memory
    DROP CONSTRAINT memories_memory_pkey,
    ADD CONSTRAINT memories_memory_pkey PRIMARY KEY (id);
ALTER TABLE memories_memoryarchive
    DROP CONSTRAINT memories_memoryarchive_pkey,
    ADD CONSTRAINT memories_memoryarchive_pkey PRIMARY KEY (memory_id);
ALTER TABLE memories_memoryfeedback
    DROP CONSTRAINT memories_memoryfeedback_pkey,
    ADD CONSTRAINT memories_memoryfeedback_pkey PRIMARY KEY (id);
ALTER TABLE memories_memoryhistory
    DROP CONSTRAINT memories_memoryhistory_pkey,
    ADD CONSTRAINT memories_memoryhistory_pkey PRIMARY KEY (id);
ALTER TABLE memories_memorylink
    DROP CONSTRAINT memories_memorylink_pkey,
    ADD CONSTRAINT memories_memorylink_pkey PRIMARY KEY (id);
ALTER TABLE memories_projectprompt
    DROP CONSTRAINT memories_projectprompt_pkey,
    ADD CONSTRAINT memories_projectprompt_pkey PRIMARY KEY (id);
ALTER TABLE memoryplatform_eventrecord
    DROP CONSTRAINT memoryplatform_eventrecord_pkey,
    ADD CONSTRAINT memoryplatform_eventrecord_pkey PRIMARY KEY (id);
ALTER TABLE portability_exportjob
    DROP CONSTRAINT portability_exportjob_pkey,
    ADD CONSTRAINT portability_exportjob_pkey PRIMARY KEY (id);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("memoryplatform", "0001_event_log"),
        ("analytics", "0004_search_stat_cached"),
        ("documents", "0003_tenant_foreign_keys_without_db_constraint"),
        ("entities", "0004_tenant_foreign_keys_without_db_constraint"),
        ("memories", "0021_tenant_foreign_keys_without_db_constraint"),
        ("portability", "0001_export_jobs"),
        ("tenants", "0003_verbose_names"),
    ]

    operations = [
        migrations.RunSQL(sql=PRIMARY_KEYS, reverse_sql=ID_PRIMARY_KEYS),
        migrations.RunSQL(sql=FOREIGN_KEYS, reverse_sql=DROP_FOREIGN_KEYS),
    ]
