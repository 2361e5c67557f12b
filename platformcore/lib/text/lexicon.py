"""The words the clause reader knows: verbs and their forms, the verb phrases that state a
relation, negations, and the small closed classes (determiners, adverbs, kinship nouns).

English in general, not any one text: a phrase is here because it is a common way to say a
relation ("works for", "is based in", "reports to"), in every tense the reader can tell
apart. `clauses.py` reads with them."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from platformcore.lib.text.gazetteer import words

PERSON, ORGANIZATION, LOCATION, TECHNOLOGY = "person", "organization", "location", "technology"

# --- words ----------------------------------------------------------------------------------

NOT_NAMES = words(
    """
    i me my mine we us our you your he him his she her they them their it its this that
    these those there here the a an and or but so if then when where what why how who which
    whose today yesterday tomorrow tonight now also just only still actually really well
    yes no not ok okay hi hello hey thanks please user users everyone someone nobody
    everything something nothing anyone anything all some every each any both either many
    monday tuesday wednesday thursday friday saturday sunday january february march april
    may june july august september october november december mr mrs ms dr sir madam
    last next first new old good great big little after before since until while because
    btw fyi anyway sure maybe perhaps recently currently usually always never sometimes
    """
)
DETERMINERS = words("the a an his her their its our some this that")
ADVERBS = words("""
    now currently also still actually recently just really already officially finally mostly
    usually primarily mainly happily fully remotely full-time part-time even basically
    generally typically definitely absolutely strongly personally probably apparently
    """)
CONNECTORS = words("of de van von del da du la le & y")
# lowercase nouns that end an organisation's or a team's name ("the Platform team")
GROUP_NOUNS = words("""
    team group department lab labs office project squad committee club division unit branch
    initiative program programme service platform guild chapter council board
    """)
LEADING = words("""
    actually so well also oh btw anyway and but fyi honestly ok okay yeah yes no hi hello hey
    now then plus besides meanwhile lately nowadays today currently
    """)
# "my <noun> <Name>": how the user relates to the person named
KIN = {
    "manager": "reports_to",
    "boss": "reports_to",
    "supervisor": "reports_to",
    "lead": "reports_to",
    "colleague": "collaborates_with",
    "coworker": "collaborates_with",
    "co-worker": "collaborates_with",
    "teammate": "collaborates_with",
    "cofounder": "collaborates_with",
    "co-founder": "collaborates_with",
    "partner": "knows",
    "friend": "knows",
    "neighbour": "knows",
    "neighbor": "knows",
    "wife": "knows",
    "husband": "knows",
    "sister": "knows",
    "brother": "knows",
    "mother": "knows",
    "father": "knows",
    "mom": "knows",
    "mum": "knows",
    "dad": "knows",
    "son": "knows",
    "daughter": "knows",
    "cousin": "knows",
    "roommate": "knows",
    "girlfriend": "knows",
    "boyfriend": "knows",
    "mentor": "knows",
    "report": "manages",  # "my report Dana": the user manages Dana
    "intern": "manages",
}
NEGATIONS = {
    ("no", "longer"): True,
    ("not",): True,
    ("never",): True,
    ("don't",): True,
    ("doesn't",): True,
    ("didn't",): True,
    ("isn't",): True,
    ("aren't",): True,
    ("wasn't",): True,
    ("haven't",): True,
    ("hasn't",): True,
    ("won't",): True,
    ("do", "not"): True,
    ("does", "not"): True,
    ("did", "not"): True,
    ("formerly",): True,
    ("previously",): True,
    ("once",): True,
}
AUXILIARIES = words("be have will would do can could shall should may might must")

# --- verbs ----------------------------------------------------------------------------------

BASE_VERBS = words("""
    work live use manage report prefer know lead run join move relocate reside belong head
    oversee depend rely build create found develop design write meet collaborate partner
    pair teach start leave quit switch base locate employ code program favour favor stay
    marry hire resign retire supervise own stop be have love like enjoy hate want need
    migrate adopt drop abandon intern study mentor consult freelance date befriend
    headquarter settle visit grow born get
    """)
IRREGULAR = {
    "is": "be", "am": "be", "are": "be", "was": "be", "were": "be", "been": "be",
    "being": "be", "'s": "be", "'m": "be", "'re": "be", "'ve": "have", "has": "have", "had": "have",
    "having": "have", "ran": "run", "running": "run", "knew": "know", "known": "know",
    "led": "lead", "left": "leave", "leaving": "leave", "wrote": "write", "written": "write",
    "built": "build", "met": "meet", "taught": "teach", "quitting": "quit", "does": "do",
    "did": "do", "doing": "do", "began": "start", "grew": "grow", "grown": "grow",
    "founded": "found", "stopped": "stop", "stopping": "stop", "preferred": "prefer",
    "preferring": "prefer", "married": "marry", "relied": "rely", "relies": "rely",
    "programmed": "program", "programming": "program", "dropped": "drop", "got": "get",
    "gotten": "get", "getting": "get", "will": "will", "would": "would", "might": "might",
    "may": "may", "can": "can", "could": "could", "should": "should", "must": "must",
    "shall": "shall", "'ll": "will", "'d": "would",
}  # fmt: skip
PAST = words("was were had ran knew led left wrote built met taught did began grew founded")


@dataclass(frozen=True)
class Verb:
    lemma: str
    past: bool


@functools.lru_cache(maxsize=4096)
def verb_of(token: str) -> Verb | None:
    """The lemma of an inflected verb this module knows ("worked" → work, past)."""
    word = token.casefold()
    if word in IRREGULAR:
        return Verb(IRREGULAR[word], word in PAST or word.endswith("ed"))
    if word in BASE_VERBS:
        return Verb(word, False)
    for suffix, replacement, past in INFLECTIONS:
        if word.endswith(suffix):
            stem = word[: len(word) - len(suffix)] + replacement
            if stem in BASE_VERBS:
                return Verb(stem, past)
    return None


INFLECTIONS = [
    ("ies", "y", False),
    ("ied", "y", True),
    ("es", "", False),
    ("s", "", False),
    ("ed", "", True),
    ("d", "", True),
    ("ing", "", False),
    ("ing", "e", False),
]

# --- verb phrases ---------------------------------------------------------------------------
# (words, relation, target role, subject role, how): words are lemmas ("work") or literal
# words; "*" takes 1-6 words of a job title ("is a senior data engineer at"). `how` is
# "" (a statement), "end" (it stopped: "left", "quit"), "past" (the past tense ends it:
# "worked at", "lived in"), "from" (X ends and a following "to Y" starts: "moved from X to Y").
P, ORG, L, T = PERSON, ORGANIZATION, LOCATION, TECHNOLOGY
_PHRASE_TABLE: list[tuple[str, str, str | None, str | None, str]] = [
    ("work at", "works_at", ORG, P, "past"),
    ("work for", "works_at", ORG, P, "past"),
    ("work in", "works_at", ORG, P, "past"),
    ("work with", "collaborates_with", None, P, ""),
    ("work as * at", "works_at", ORG, P, "past"),
    ("work as * for", "works_at", ORG, P, "past"),
    ("work alongside", "collaborates_with", None, P, ""),
    ("be employed at", "works_at", ORG, P, ""),
    ("be employed by", "works_at", ORG, P, ""),
    ("be hire by", "works_at", ORG, P, ""),
    ("be hired by", "works_at", ORG, P, ""),
    ("get hired by", "works_at", ORG, P, ""),
    ("join", "works_at", ORG, P, ""),
    ("start at", "works_at", ORG, P, ""),
    ("start work at", "works_at", ORG, P, ""),
    ("start work for", "works_at", ORG, P, ""),
    ("start a new job at", "works_at", ORG, P, ""),
    ("teach at", "works_at", ORG, P, "past"),
    ("intern at", "works_at", ORG, P, "past"),
    ("consult for", "works_at", ORG, P, "past"),
    ("freelance for", "works_at", ORG, P, "past"),
    ("be at", "works_at", ORG, P, ""),
    ("be a * at", "works_at", ORG, P, "past"),
    ("be an * at", "works_at", ORG, P, "past"),
    ("be a * for", "works_at", ORG, P, "past"),
    ("be an * for", "works_at", ORG, P, "past"),
    ("be the * at", "works_at", ORG, P, "past"),
    ("be the * of", "works_at", ORG, P, "past"),
    ("be * at", "works_at", ORG, P, "past"),
    ("leave", "works_at", ORG, P, "end"),
    ("quit", "works_at", ORG, P, "end"),
    ("resign from", "works_at", ORG, P, "end"),
    ("retire from", "works_at", ORG, P, "end"),
    ("be lay off by", "works_at", ORG, P, "end"),
    ("be fire from", "works_at", ORG, P, "end"),
    ("live in", "located_in", L, P, "past"),
    ("live at", "located_in", L, P, "past"),
    ("reside in", "located_in", L, P, "past"),
    ("stay in", "located_in", L, P, "past"),
    ("be based in", "located_in", L, None, "past"),
    ("be based out of", "located_in", L, None, "past"),
    ("be located in", "located_in", L, None, "past"),
    ("be headquartered in", "located_in", L, None, "past"),
    ("be headquarter in", "located_in", L, None, "past"),
    ("be live in", "located_in", L, P, ""),
    ("move to", "located_in", L, P, ""),
    ("move back to", "located_in", L, P, ""),
    ("relocate to", "located_in", L, P, ""),
    ("settle in", "located_in", L, P, ""),
    ("move from", "located_in", L, P, "from"),
    ("move away from", "located_in", L, P, "end"),
    ("move out of", "located_in", L, P, "end"),
    ("relocate from", "located_in", L, P, "from"),
    ("use", "uses", T, None, "past"),
    ("be use", "uses", T, None, ""),
    ("code in", "uses", T, P, "past"),
    ("program in", "uses", T, P, "past"),
    ("develop in", "uses", T, P, "past"),
    ("write in", "uses", T, P, "past"),
    ("rely on", "uses", T, None, ""),
    ("switch to", "uses", T, None, ""),
    ("migrate to", "uses", T, None, ""),
    ("adopt", "uses", T, None, ""),
    ("switch from", "uses", T, None, "from"),
    ("migrate from", "uses", T, None, "from"),
    ("drop", "uses", T, None, "end"),
    ("abandon", "uses", T, None, "end"),
    ("stop use", "uses", T, None, "end"),
    ("manage", "manages", None, P, "past"),
    ("lead", "manages", None, P, "past"),
    ("head", "manages", None, P, "past"),
    ("oversee", "manages", None, P, "past"),
    ("supervise", "manages", None, P, "past"),
    ("run", "manages", None, P, "past"),
    ("be the manager of", "manages", None, P, "past"),
    ("be the head of", "manages", None, P, "past"),
    ("be the lead of", "manages", None, P, "past"),
    ("be in charge of", "manages", None, P, "past"),
    ("report to", "reports_to", P, P, "past"),
    ("report directly to", "reports_to", P, P, "past"),
    ("be manage by", "reports_to", P, P, ""),
    ("be managed by", "reports_to", P, P, ""),
    ("be part of", "part_of", ORG, None, "past"),
    ("be a member of", "part_of", ORG, None, "past"),
    ("be a part of", "part_of", ORG, None, "past"),
    ("be on", "part_of", ORG, None, "in"),
    ("be in", "part_of", ORG, None, "in"),
    ("belong to", "part_of", ORG, None, "past"),
    ("prefer", "prefers", None, P, "past"),
    ("favour", "prefers", None, P, ""),
    ("favor", "prefers", None, P, ""),
    ("know", "knows", P, P, ""),
    ("meet", "knows", P, P, ""),
    ("be friends with", "knows", P, P, ""),
    ("be a friend of", "knows", P, P, ""),
    ("be friend with", "knows", P, P, ""),
    ("be married to", "knows", P, P, ""),
    ("marry", "knows", P, P, ""),
    ("date", "knows", P, P, ""),
    ("befriend", "knows", P, P, ""),
    ("collaborate with", "collaborates_with", None, P, ""),
    ("partner with", "collaborates_with", None, None, ""),
    ("pair with", "collaborates_with", P, P, ""),
    ("depend on", "depends_on", None, None, ""),
    ("build", "created_by", None, P, ""),
    ("create", "created_by", None, P, ""),
    ("found", "created_by", ORG, P, ""),
    ("co-found", "created_by", ORG, P, ""),
    ("cofound", "created_by", ORG, P, ""),
    ("develop", "created_by", None, P, ""),
    ("design", "created_by", None, P, ""),
    ("write", "created_by", None, P, ""),
]
JOB_WORDS = 6
TAIL = 6  # words a predicate's modifier may take before the next one ("as a chemist")
NOT_JOB = words(", ; : no not never longer and or but who that which whom")


@dataclass(frozen=True)
class Phrase:
    words: tuple[str, ...]
    relation: str
    target_role: str | None
    source_role: str | None
    how: str


def _phrases() -> dict[str, list[Phrase]]:
    """Phrases by their first word, longest first (the longest that matches wins)."""
    table: dict[str, list[Phrase]] = {}
    for text, relation, target_role, source_role, how in _PHRASE_TABLE:
        phrase = Phrase(tuple(text.split()), relation, target_role, source_role, how)
        table.setdefault(phrase.words[0], []).append(phrase)
    for phrases in table.values():
        phrases.sort(key=lambda phrase: ("*" in phrase.words, -len(phrase.words)))
    return table


PHRASES = _phrases()
WORKS_AT = Phrase(("work", "at"), "works_at", ORGANIZATION, PERSON, "")


AUX_FOLLOWERS = frozenset(BASE_VERBS) | {"been", "be", "being"}
MODALS = words("would might may can could should must shall")
PHRASES_NOUNS = frozenset({"head", "lead", "report", "design", "date", "found"})


# verbs that make "<Name> <verb> ..." a statement worth keeping about that name
STATEMENT_VERBS = words(
    """
    plays speaks studies owns drives became got went bought has had is was loves likes
    enjoys hates wants needs lives works uses manages reports prefers knows met moved joined
    left started visited teaches runs leads heads writes built founded created adopted
    switched migrated relocated quit retired graduated married dates dated grew raised
    collaborates belongs depends relies supports sings paints cooks travels volunteers
    coaches mentors hired promoted retired plans wants
    """
)
