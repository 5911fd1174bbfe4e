"""Text and records for the model tests: template sentences a tiny model learns in a few steps,
and question/answer records (the held-out set asks with a template the training set lacks)."""
from __future__ import annotations

import random

NAMES = ["anna", "bruno", "chen", "dara", "emil", "fatima", "goran", "hana"]
VERBS = ["paints", "finds", "carries", "watches", "sells", "cleans", "moves", "draws"]
ADJECTIVES = ["small", "old", "heavy", "bright", "quiet", "round", "soft", "long"]
PLACES = ["garden", "kitchen", "market", "harbour", "library", "station", "bakery", "forest"]
COLORS = {"apple": "red", "banana": "yellow", "leaf": "green", "sky": "blue", "coal": "black", "snow": "white",
          "orange": "orange", "plum": "purple", "rose": "pink", "sand": "beige", "ash": "grey", "cocoa": "brown"}
QUESTIONS = ["What color is the {noun}?", "Tell me the color of the {noun}.", "Which color does the {noun} have?",
             "Name the color of a {noun}."]
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def story(rng: random.Random, sentences: int) -> str:
    """A short document of template sentences (learnable by a tiny model in a few steps)."""
    nouns = list(COLORS)
    return " ".join(f"{rng.choice(NAMES)} {rng.choice(VERBS)} the {rng.choice(ADJECTIVES)} {rng.choice(nouns)} "
                    f"in the {rng.choice(PLACES)}." for _ in range(sentences))


def qa_records(held_out: bool) -> list[dict]:
    """Question/answer records; the held-out set asks with the last question template."""
    templates = QUESTIONS[-1:] if held_out else QUESTIONS[:-1]
    return [{"question": t.format(noun=n), "answer": c} for t in templates for n, c in COLORS.items()]
