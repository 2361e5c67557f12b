"""Who does what to whom, offline: relation statements read from plain English clauses.

"Alice works at Google and uses Kubernetes", "My manager Sarah reports to Tom", "I no longer
live in Paris", "She moved from Paris to Berlin": a sentence is cut into tokens, and each
clause is read left to right as subject, (negation), verb phrase, objects. The subject is the
user ("I", "User"), a name ("Alice", "Acme Corp", "the Platform team"), "my <manager|friend|
...> <Name>", or "he"/"she" for the last person named. A verb phrase is looked up in
`PHRASES` (lemmas, so "works", "worked" and "working" are one entry); its objects are names,
several when listed ("uses Python, Django and Redis").

Reading is one pass over the tokens: every phrase is tried only where a verb may start, and
each token is consumed once, so the cost is linear in the text whatever it holds (hostile
input included); no regular expression here can backtrack over more than one token.

What the statement means for the graph: `retracted` says it ended ("no longer works at",
"left", "used to live in", "moved from"). Roles are hints for typing an unknown name
("works at X": X is an organization); the caller's gazetteers come first."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from platformcore.lib.text.lexicon import (
    ADVERBS,
    AUX_FOLLOWERS,
    AUXILIARIES,
    CONNECTORS,
    DETERMINERS,
    GROUP_NOUNS,
    JOB_WORDS,
    KIN,
    LEADING,
    LOCATION,
    MODALS,
    NEGATIONS,
    NOT_JOB,
    NOT_NAMES,
    ORGANIZATION,
    PERSON,
    PHRASES,
    PHRASES_NOUNS,
    STATEMENT_VERBS,
    TAIL,
    TECHNOLOGY,
    WORKS_AT,
    Phrase,
    verb_of,
)

SELF = "User"  # the person the conversation is from, as facts name them

KindOf = Callable[[str], "str | None"]  # the type of a well-known name, or None


@dataclass(frozen=True)
class Statement:
    source: str
    relation: str
    target: str
    retracted: bool = False
    source_role: str | None = None
    target_role: str | None = None


_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'&+#._-]{0,60}|[,;:@]")
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)|\n")

# --- reading --------------------------------------------------------------------------------


class _Reader:
    """One text, read token by token; `last_person` is who "he"/"she" refers to."""

    def __init__(self, tokens: list[str], last_person: str | None, kind_of: KindOf) -> None:
        self.tokens = tokens
        self.lowers = [token.casefold() for token in tokens]
        verbs = [verb_of(token) for token in self.lowers]
        self.lemmas = [
            verb.lemma if verb else word for verb, word in zip(verbs, self.lowers, strict=True)
        ]
        self.last_person = last_person
        self.kind_of = kind_of
        self.perfect = False  # the verb phrase read last had "have" before its verb
        self.hypothetical = False  # ... or a modal ("might join"): it states nothing
        self.statements: list[Statement] = []

    # tokens
    def word(self, i: int) -> str:
        return self.tokens[i] if i < len(self.tokens) else ""

    def lower(self, i: int) -> str:
        return self.lowers[i] if i < len(self.lowers) else ""

    def lemma(self, i: int) -> str:
        return self.lemmas[i] if i < len(self.lemmas) else ""

    # names
    def name_at(self, i: int) -> tuple[str, int] | None:
        """A capitalised name starting at i ("Acme Corp", "Bank of America", "Platform
        team"), or a technology written in lower case after a verb that takes one."""
        if self.lower(i) in DETERMINERS and _is_capitalised(self.word(i + 1)):
            i += 1
        new_name = self.lower(i) == "new" and _is_capitalised(self.word(i + 1))  # New York
        if not _is_capitalised(self.word(i)) or (self.lower(i) in NOT_NAMES and not new_name):
            return None
        end = i + 1
        while end - i < 6:
            if _is_capitalised(self.word(end)) and self.lower(end) not in NOT_NAMES:
                end += 1
            elif self.lower(end) in CONNECTORS and _is_capitalised(self.word(end + 1)):
                end += 2
            else:
                break
        if self.lower(end) in GROUP_NOUNS:
            end += 1
        return _strip_possessive(" ".join(self.tokens[i:end])), end

    def object_at(self, i: int, role: str | None) -> tuple[str, int] | None:
        if self.lower(i) in DETERMINERS and not _is_capitalised(self.word(i + 1)):
            if role != TECHNOLOGY:
                return None
            i += 1
        if self.lower(i) in ("me", "myself"):
            return SELF, i + 1
        if self.lower(i) in ("him", "her") and self.last_person and role in (PERSON, None):
            return self.last_person, i + 1
        found = self.name_at(i)
        if found:
            return found
        if role == TECHNOLOGY and self.kind_of(self.word(i)) == TECHNOLOGY:
            return self.word(i), i + 1
        return None

    def objects_at(self, i: int, role: str | None) -> tuple[list[str], int]:
        """One object, or a list of them ("Python, Django and Redis")."""
        first = self.object_at(i, role)
        if first is None:
            return [], i
        names, i = [first[0]], first[1]
        while self.lower(i) in (",", "and", "&", "or"):
            j = i + 1 + (self.lower(i) == "," and self.lower(i + 1) in ("and", "or"))
            following = self.object_at(j, role)
            if following is None or self.verb_follows(following[1]):
                break
            names.append(following[0])
            i = following[1]
        return names, i

    def verb_follows(self, i: int) -> bool:
        return verb_of(self.word(i)) is not None and self.lower(i) not in PHRASES_NOUNS

    # subjects
    def subject_at(self, i: int) -> tuple[str, int] | None:
        word = self.lower(i)
        if word == "user" and self.word(i + 1) == "'s":
            return self.relative_at(i + 2, SELF)
        if word in ("i", "user"):
            return SELF, i + 1
        if word == "the" and self.lower(i + 1) == "user":
            return SELF, i + 2
        if word in ("he", "she") and self.last_person:
            return self.last_person, i + 1
        if word in ("my", "user's", "our"):
            return self.relative_at(i + 1, SELF)
        found = self.name_at(i)
        if found is None:
            return None
        name, end = found
        if self.word(end) == "'s" or self.word(end - 1).endswith("'s"):
            owner_end = end + (self.word(end) == "'s")
            relative = self.relative_at(owner_end, name)
            if relative is not None:
                return relative
        return name, end

    def relative_at(self, i: int, owner: str) -> tuple[str, int] | None:
        """After "my": "manager Sarah" (Sarah, and the user reports to her) or "manager is
        Sarah" (the statement alone)."""
        kin = KIN.get(self.lower(i))
        if kin is None:
            return None
        name = self.name_at(i + 1)
        if name is not None:
            self.add_kin(owner, kin, name[0])
            return name
        if self.lemma(i + 1) == "be":
            named = self.name_at(i + 2)
            if named is not None:
                self.add_kin(owner, kin, named[0])
                return None  # "my manager is Sarah" says nothing more
        return None

    def add_kin(self, owner: str, relation: str, name: str) -> None:
        self.last_person = name
        self.statements.append(Statement(owner, relation, name, False, PERSON, PERSON))

    # verb phrases
    def negation_at(self, i: int) -> tuple[bool, int]:
        negated = False
        while i < len(self.tokens):
            word = self.lower(i)
            if word in ADVERBS:
                i += 1
            elif (word, self.lower(i + 1)) in NEGATIONS:
                negated, i = True, i + 2
            elif (word,) in NEGATIONS:
                negated, i = True, i + 1
            elif word == "used" and self.lower(i + 1) == "to":
                negated, i = True, i + 2
            elif word in ("stopped", "quit") and self.lower(i + 1).endswith("ing"):
                negated, i = True, i + 1
            else:
                break
        return negated, i

    def phrase_at(self, i: int) -> tuple[Phrase, int, bool] | None:
        """The longest phrase starting at i: (phrase, end, was the verb in the past)."""
        verb = verb_of(self.word(i))
        if verb is None:
            return None
        for phrase in PHRASES.get(verb.lemma, []):
            end = self.match(phrase.words, i)
            if end is not None:
                return phrase, end, verb.past
        return None

    def match(self, words: tuple[str, ...], i: int) -> int | None:
        for index, expected in enumerate(words):
            if expected == "*":
                return self.match_job(words[index + 1 :], i)
            if index and self.lower(i) in ADVERBS and expected not in ADVERBS:
                i += 1  # "works mostly at", "is also part of"
            if self.lemma(i) != expected and self.lower(i) != expected:
                return None
            i += 1
        return i

    def match_job(self, rest: tuple[str, ...], i: int) -> int | None:
        """A job title of up to JOB_WORDS words, then the rest of the phrase."""
        for length in range(1, JOB_WORDS + 1):
            word = self.lower(i + length - 1)
            verb = verb_of(word)
            if not word or word in NOT_JOB or (verb is not None and verb.lemma in AUXILIARIES):
                return None
            end = self.match(rest, i + length)
            if end is not None:
                return end
        return None

    # clauses
    def read(self) -> list[Statement]:
        i = 0
        while i < len(self.tokens):
            i = self.clause(i)
        return self.statements

    def clause(self, i: int) -> int:
        while self.lower(i) in LEADING or self.word(i) in (",", ";", ":"):
            i += 1
        subject = self.subject_at(i)
        if subject is None:
            return self.skip_clause(i)
        subjects, i = [subject[0]], subject[1]
        while self.lower(i) in ("and", "&") and len(subjects) < 5:  # "Ahmed and Ali work at"
            other = self.subject_at(i + 1)
            if other is None:
                break
            subjects.append(other[0])
            i = other[1]
        if subjects[-1] != SELF and self.lower(i) == ",":
            i = self.apposition(i)
        return self.predicates(subjects, i)

    def apposition(self, i: int) -> int:
        """ "Alice, our CTO, works at ...": skip a short aside between commas."""
        for j in range(i + 1, min(i + 8, len(self.tokens))):
            if self.word(j) == ",":
                return j + 1
        return i

    def predicates(self, subjects: list[str], i: int) -> int:
        """One or more predicates of the same subjects ("works at X as a chemist and lives
        in Y"): after a predicate, up to TAIL words may pass before "and" or a comma."""
        start = i
        i = self.predicate(subjects, i)
        while i > start:
            joint = self.joint_after(i)
            if joint is None or self.lower(joint) == "i":
                break
            if self.subject_at(joint) is not None:
                return joint
            start, i = joint, self.predicate(subjects, joint)
        return i if i > start else self.skip_clause(i)

    def joint_after(self, i: int) -> int | None:
        """Where the next predicate starts: after "and", ", and", "but" or a comma within
        TAIL words of i, if nothing else (a verb, a clause mark) comes first."""
        for j in range(i, min(i + TAIL, len(self.tokens))):
            word = self.lower(j)
            if word in ("and", ",", "but"):
                return j + 1 + (word == "," and self.lower(j + 1) in ("and", "but"))
            if word in (";", ":") or (j > i and verb_of(word) is not None):
                return None
        return None

    def verb_phrase_at(self, i: int) -> tuple[bool, int, tuple[Phrase, int, bool] | None]:
        """Negation, then the phrase; auxiliaries that carry nothing are passed over ("has
        been working at", "will not be using"), at most three of them."""
        negated, j = self.negation_at(i)
        self.perfect = self.hypothetical = False
        for _ in range(3):
            found = self.phrase_at(j)
            verb = verb_of(self.word(j))
            if found is not None or verb is None or verb.lemma not in AUXILIARIES:
                return negated, j, found
            more, k = self.negation_at(j + 1)
            if more and verb.lemma == "be":  # "is not part of", "'m no longer at"
                found = self.phrase_after("be", k, verb.past)
                if found is not None:
                    return True, k, found
            if k == j + 1 and self.lemma(k) not in AUX_FOLLOWERS:
                return negated, j, None
            self.perfect = self.perfect or verb.lemma == "have"
            self.hypothetical = self.hypothetical or verb.lemma in MODALS
            negated, j = negated or more, k
        return negated, j, None

    def phrase_after(self, lemma: str, i: int, past: bool) -> tuple[Phrase, int, bool] | None:
        """A phrase of `lemma` whose verb was already read ("is" of "is not part of")."""
        for phrase in PHRASES.get(lemma, []):
            end = self.match(phrase.words[1:], i)
            if end is not None:
                return phrase, end, past
        return None

    def predicate(self, subjects: list[str], i: int) -> int:
        negated, j, found = self.verb_phrase_at(i)
        if found is None:
            if subjects[-1] != SELF and self.lemma(j) == "be":
                return self.kin_complement(subjects[-1], j + 1, negated)
            return i
        phrase, j, past = found
        if self.hypothetical:
            return j
        ongoing = self.perfect  # "has lived in": still does
        ended = negated or phrase.how == "end" or (phrase.how == "past" and past and not ongoing)
        if phrase.how == "end" and negated:
            return j  # "never left Google": nothing to state
        names, end = self.objects_at(j, phrase.target_role)
        if not names and phrase.relation in ("works_at", "manages"):
            return self.employer_after(subjects, j, ended)
        for subject in subjects:
            for name in names:
                self.state(subject, phrase, name, ended or phrase.how == "from")
        if phrase.how == "from" and names and self.lower(end) == "to":
            more, end = self.objects_at(end + 1, phrase.target_role)
            for subject in subjects:
                for name in more:
                    self.state(subject, phrase, name, negated)
        return end if names else j

    def employer_after(self, subjects: list[str], i: int, ended: bool) -> int:
        """ "leads the mobile team at Spotify": no named object, but a known organisation
        "at" the end of a short phrase is where the subject works."""
        for j in range(i, min(i + TAIL, len(self.tokens))):
            if self.lower(j) == "at":
                found = self.name_at(j + 1)
                if found is None or self.kind_of(found[0]) != ORGANIZATION:
                    return j
                for subject in subjects:
                    self.state(subject, WORKS_AT, found[0], ended)
                return found[1]
            if _is_capitalised(self.word(j)) or self.lower(j) in (",", ";", "and"):
                return j
        return i

    def kin_complement(self, subject: str, i: int, negated: bool) -> int:
        """ "Sarah is my manager", "Tom is Alice's colleague"."""
        if self.lower(i) in ("my", "our"):
            owner, i = SELF, i + 1
        elif self.lower(i) == "user" and self.word(i + 1) == "'s":
            owner, i = SELF, i + 2
        else:
            found = self.name_at(i)
            if found is None or not found[0] or not self.word(found[1] - 1).endswith("'s"):
                if found is None or self.word(found[1]) != "'s":
                    return i
                owner, i = found[0], found[1] + 1
            else:
                owner, i = found[0], found[1]
        kin = KIN.get(self.lower(i))
        if kin is None or negated:
            return i
        self.last_person = subject
        self.statements.append(Statement(owner, kin, subject, False, PERSON, PERSON))
        return i + 1

    def state(self, subject: str, phrase: Phrase, name: str, retracted: bool) -> None:
        source, target = subject, name
        source_role, target_role = phrase.source_role, phrase.target_role
        if phrase.how == "in":  # "is in Berlin" (a place) or "is in the Data team" (a group)
            if self.kind_of(name) == LOCATION:
                phrase = Phrase(phrase.words, "located_in", LOCATION, None, "")
                target_role = LOCATION
            elif name.rsplit(" ", 1)[-1].casefold() not in GROUP_NOUNS:
                return
        if phrase.relation == "created_by":  # "Alice built X": X created_by Alice
            source, target = name, subject
            source_role, target_role = target_role, source_role
        if source.casefold() == target.casefold():
            return
        if target_role == PERSON and self.kind_of(target) not in (None, PERSON):
            return  # "knows Python", "met Google": not a person
        if subject != SELF and phrase.source_role == PERSON:
            self.last_person = subject
        self.statements.append(
            Statement(source, phrase.relation, target, retracted, source_role, target_role)
        )

    def skip_clause(self, i: int) -> int:
        """To the next place a clause may start: after a comma, "and", "but" or ";"."""
        i += 1
        while i < len(self.tokens) and self.lower(i) not in (",", ";", ":", "and", "but"):
            i += 1
        return i


def _is_capitalised(word: str) -> bool:
    return bool(word) and word[0].isupper()


def _strip_possessive(name: str) -> str:
    return name[:-2] if name.endswith("'s") else name


_CLITIC = re.compile(r"^(.+?)('s|'m|'re|'ve|'ll|'d)$", re.IGNORECASE)


def tokens_of(text: str) -> list[str]:
    """Words and clause punctuation; a clitic is a token of its own ("Alice's" → "Alice",
    "'s"; "I'm" → "I", "'m") so possessives and contractions read as words."""
    tokens = []
    for token in _TOKEN.findall(text.replace("\u2019", "'")):
        token = token.rstrip("'._-") or token
        clitic = _CLITIC.match(token)
        tokens += [clitic.group(1), clitic.group(2).casefold()] if clitic else [token]
    return tokens


def sentences_of(text: str) -> Iterator[str]:
    for sentence in _SENTENCE_END.split(text):
        if sentence.strip():
            yield sentence


def _unknown(name: str) -> str | None:
    return None


def read_statements(
    text: str, *, kind_of: KindOf = _unknown, last_person: str | None = None
) -> list[Statement]:
    """The relation statements of a text, sentence after sentence ("he"/"she" is the last
    person named before). `kind_of` gives the type of a well-known name (gazetteers): a
    technology is taken as an object even in lower case ("uses python"), a place after "is
    in" is where the subject is."""
    statements: list[Statement] = []
    for sentence in sentences_of(text):
        reader = _Reader(tokens_of(sentence), last_person, kind_of)
        statements += reader.read()
        last_person = reader.last_person
    return statements


# --- statements about someone ---------------------------------------------------------------


def named_subject(clause: str, *, kind_of: KindOf = _unknown) -> str | None:
    """The name a third-person clause is about ("Alice works at Google" → "Alice"), when it
    is a statement worth keeping: a relation is read from it, or a known person's or a
    multi-word name is followed by a statement verb. None for "Deploy failed", "Python is
    great", a first-person clause or a question."""
    tokens = tokens_of(clause)
    reader = _Reader(tokens, None, kind_of)
    subject = reader.subject_at(0)
    if subject is None or subject[0] == SELF or tokens[0].casefold() in ("my", "user's", "our"):
        return None
    name, end = subject
    if reader.read():
        return name
    if reader.word(end) == "'s" and not _is_capitalised(reader.word(end + 1)):
        end += 2  # "Anna's team uses Jira": about Anna's team
    _negated, j = reader.negation_at(end)
    verb = reader.lower(j)
    known = kind_of(name) in (PERSON, ORGANIZATION) or " " in name
    return name if known and (verb in STATEMENT_VERBS or verb in MODALS) else None
