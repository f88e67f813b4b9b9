"""How to embed a memory longer than the model's window: which vector finds it best.

all-MiniLM-L6-v2 reads 256 word pieces (about 1,000 characters of English) and ignores the rest.
Each of 30 long memories (about 12,000 characters of unrelated meeting notes) holds one fact, at
its start, its middle or its end; a paraphrased question asks for each fact. Three ways to give a
memory its vector(s) are compared by where the memory holding the answer ranks among the 30:
- `head`: the model's own truncation (the first window only);
- `mean of chunks`: one vector, the normalised mean of the vectors of ~1,000-character chunks;
- `max over chunks`: one vector per chunk, the memory scored by its best chunk (several vectors
  per memory);
- `polymem recall`: what polymem does (one vector of the head, the full text indexed whole),
  through `recall` on a memory:// store.
Prints hit@1 and mean reciprocal rank per fact position, and the machine load.

    .venv/bin/python bench/bench_long_memories.py [start middle end]
"""

from __future__ import annotations

import os
import random
import sys
import time

import numpy as np

import polymem
from polymem import SentenceTransformerEmbedder

FACTS = [
    ("The staging database listens on port 5433.", "Which port does the staging database use?"),
    ("Maria's daughter is allergic to peanuts.", "What food allergy does Maria's child have?"),
    ("The office Wi-Fi password was changed to bluefalcon42.", "What is the new wireless network password?"),
    ("Our quarterly revenue target is 4.2 million euros.", "How much money should we earn this quarter?"),
    ("The user's cat is named Pixel and is nine years old.", "What is the name of the user's pet?"),
    ("Deployments are frozen every Friday after 3 pm.", "When are releases not allowed?"),
    ("Tom prefers window seats on long flights.", "Where does Tom like to sit on a plane?"),
    ("The backup job runs nightly at 02:15 UTC.", "At what time do the nightly backups start?"),
    ("Invoices must be approved by Priya before payment.", "Who signs off on bills before they are paid?"),
    ("The Berlin team moved to the new building on Ostbahnhof street.", "Where is the Berlin office now?"),
    ("The user is training for the Lisbon marathon in October.", "Which race is the user preparing for?"),
    ("Customer churn rose to 7 percent in March.", "How many customers did we lose in March?"),
    ("The API rate limit is 600 requests per minute per token.", "How many calls can a client make each minute?"),
    ("Ahmed speaks Arabic, French and a little Japanese.", "Which languages does Ahmed know?"),
    ("The printer on the third floor jams with recycled paper.", "Why does the printer upstairs keep failing?"),
    ("Our cloud bill doubled after enabling GPU instances.", "Why did hosting costs go up?"),
    ("The user is vegetarian but eats fish on holidays.", "What does the user eat?"),
    ("The contract with Acme renews automatically on June 1.", "When does the Acme agreement renew?"),
    ("Lena is on parental leave until the end of September.", "When will Lena be back at work?"),
    ("The mobile app crashes on Android 12 when the camera opens.", "What bug affects phones using the camera?"),
    ("Grandma's apple pie recipe uses cardamom instead of cinnamon.", "Which spice goes into the family pie?"),
    ("The user's flight to Osaka departs on the 14th at 9:40.", "When does the trip to Japan leave?"),
    ("The legacy billing service is written in COBOL.", "What language is the old payments system in?"),
    ("Support tickets tagged urgent must be answered within two hours.", "How fast must we reply to critical requests?"),
    ("The user's favourite band is Radiohead.", "What music does the user like most?"),
    ("We store customer data only in the Frankfurt region.", "Where is client information hosted?"),
    ("The board meeting was moved to Thursday afternoon.", "When is the directors' meeting now?"),
    ("Jonas broke his wrist skiing and cannot type for a month.", "Why is Jonas unable to write code?"),
    ("The warehouse in Rotterdam holds 12,000 pallets.", "How big is the Dutch storage facility?"),
    ("The user wants reminders sent by SMS, never by email.", "How should notifications reach the user?"),
]
FILLER = [
    "The team reviewed the agenda and agreed to keep the discussion short.",
    "Several people joined late because the previous call ran over.",
    "The slides from last week were shared again for those who missed them.",
    "Someone asked whether the notes could be posted in the usual channel.",
    "There was a brief conversation about the weather and the weekend plans.",
    "The facilitator reminded everyone to keep their cameras on if possible.",
    "A few action items from the previous meeting were still open.",
    "The group spent some time clarifying who owns the follow-up tasks.",
    "It was suggested that the next session start ten minutes earlier.",
    "People mentioned that the coffee machine in the kitchen works again.",
    "The discussion drifted to general process improvements for a while.",
    "Everyone agreed the documentation could be more consistent overall.",
    "A new colleague introduced themselves and described their background.",
    "The meeting room booking system was mentioned as somewhat confusing.",
    "Participants were asked to add comments to the shared document by Friday.",
    "The conversation returned to scheduling and calendar conflicts.",
]
POSITIONS = {"start": 0.0, "middle": 0.5, "end": 0.97}
LENGTH = 12_000


def long_memory(fact: str, where: float, rng: random.Random) -> str:
    sentences: list[str] = []
    while sum(len(s) + 1 for s in sentences) < LENGTH:
        sentences.append(rng.choice(FILLER))
    sentences.insert(int(where * len(sentences)), fact)
    return " ".join(sentences)


def text_chunks(text: str, size: int = 1000) -> list[str]:
    """`text` cut into pieces of at most `size` characters, at a space where one is near."""
    chunks, start = [], 0
    while start < len(text):
        end = start + size
        if end < len(text):
            cut = text.rfind(" ", start + size // 2, end)
            end = cut if cut > 0 else end
        chunks.append(text[start:end])
        start = end
    return chunks


def recall_ranks(embedder: SentenceTransformerEmbedder, memories: list[str]) -> np.ndarray:
    """Rank of the memory holding each answer in polymem's recall (len+1 when not returned)."""
    with polymem.open("memory://", embedder=embedder) as mem:
        ids = [r.memory_id for r in mem.save_many([polymem.MemoryDraft(m) for m in memories], user_id="u")]
        found = []
        for i, (_, question) in enumerate(FACTS):
            hits = [h.memory.memory_id for h in mem.recall(question, user_id="u", top_k=len(memories),
                                                           min_relevance=0)]
            found.append(hits.index(ids[i]) + 1 if ids[i] in hits else len(memories) + 1)
    return np.array(found)


def ranks(scores: np.ndarray) -> np.ndarray:
    """Rank (1 = best) of memory i for query i, from a (queries x memories) score matrix."""
    return 1 + (scores > scores.diagonal()[:, None]).sum(axis=1)


def main() -> None:
    embedder = SentenceTransformerEmbedder()
    queries = np.array(embedder.embed([q for _, q in FACTS]))
    started, load = time.perf_counter(), os.getloadavg()[0]
    print(f"{len(FACTS)} memories of ~{LENGTH:,} characters, one fact each; load {load:.1f} on {os.cpu_count()} cores")
    print(f"{'fact at':8} {'strategy':16} {'hit@1':>6} {'MRR':>6}")
    for position in sys.argv[1:] or POSITIONS:
        where = POSITIONS[position]
        rng = random.Random(7)
        memories = [long_memory(fact, where, rng) for fact, _ in FACTS]
        chunked = [text_chunks(m) for m in memories]
        flat = np.array(embedder.embed([c for chunks in chunked for c in chunks]))
        bounds = np.cumsum([0, *map(len, chunked)])
        per_memory = [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        head = np.array(embedder.embed(memories))
        mean = np.array([v.mean(axis=0) / np.linalg.norm(v.mean(axis=0)) for v in per_memory])
        best = np.array([[float((v @ q).max()) for v in per_memory] for q in queries])
        results = [(name, ranks(scores)) for name, scores in (
            ("head", queries @ head.T), ("mean of chunks", queries @ mean.T), ("max over chunks", best))]
        results.append(("polymem recall", recall_ranks(embedder, memories)))
        for name, r in results:
            print(f"{position:8} {name:16} {float((r == 1).mean()):6.2f} {float((1 / r).mean()):6.2f}")
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
