"""Reading English without a model: the clause reader (clauses.py) over its word lists
(lexicon.py, gazetteer.py), the slot a fact fills (slots.py) and the offline fact extractor
(offline_facts.py). Plain functions over text, no database: the memory store's `add` and
contradiction checks and the knowledge graph's offline extractor share them."""
