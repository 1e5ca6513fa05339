"""Generate the `homegoods` sample catalog (BEIR layout) shipped with cogr-search.

Why generated rather than hand-written: the tests, the demo and the docs need a small
catalog whose labels are *consistent* (every "oak dining table" is labelled the same
way), which hand labelling of ~8,000 pairs would not give. Products are combined from
hand-written vocabulary tables by rules, and each query carries two rules over product
attributes: one for "exact" (score 2) and one for "partial" (score 1). A seeded sample of
the remaining products (hard negatives from the same category first) is judged 0.

Run from the repository root; the output is deterministic for a given seed:

    python -m cogr_search.sample_data.make_homegoods [--out DIR] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

SEED = 7
JUDGED_PER_QUERY = 36  # "a few dozen" judgements per query, relevant ones included
MIN_IRRELEVANT = 10
OUT_DIR = Path(__file__).resolve().parent / "homegoods"

BRANDS = [
    "Hartwell", "Norrland", "Casa Verde", "Ashby & Finch", "Juniper Row", "Kestrel Home",
    "Millbrook", "Oakhaven", "Solenne", "Brightwater", "Tidewell", "Fernmoor", "Larkspur",
    "Havelock", "Corvina", "Bexley Works", "Stonegate", "Wren & Co.",
]

# colour display name -> family used by the label rules
COLOURS = {
    "white": "white", "ivory": "white", "black": "black", "charcoal": "grey", "grey": "grey",
    "light grey": "grey", "navy": "blue", "blue": "blue", "sky blue": "blue", "green": "green",
    "sage green": "green", "emerald": "green", "natural": "natural", "beige": "natural",
    "brown": "brown", "espresso": "brown", "red": "red", "rust": "red", "yellow": "yellow",
    "mustard": "yellow", "pink": "pink", "blush": "pink", "gold": "gold", "silver": "silver",
    "multicolour": "multi",
}


@dataclass(frozen=True)
class ProductType:
    """One kind of product and the attribute values it may take."""

    name: str  # singular, lower case, as shoppers say it
    category: str
    materials: list[str]
    colours: list[str]
    count: int
    sizes: list[str] = field(default_factory=list)
    styles: list[str] = field(default_factory=lambda: ["modern", "classic"])
    shapes: list[str] = field(default_factory=list)
    tags: tuple[str, ...] = ()  # extra facts the rules can test, e.g. "outdoor", "storage"
    must: list[dict] = field(default_factory=list)  # attribute combos that must exist
    blurb: str = ""  # first description sentence; {m} material, {c} colour, {s} size


STYLES_FURN = ["modern", "mid-century modern", "farmhouse", "industrial", "scandinavian", "traditional"]

TYPES: list[ProductType] = [
    # furniture
    ProductType("dining table", "furniture", ["oak", "walnut", "pine", "marble", "glass"], ["natural", "brown", "white", "black"], 9,
                sizes=["4-seat", "6-seat", "8-seat"], styles=STYLES_FURN, shapes=["rectangular", "round"],
                must=[{"material": "oak"}, {"material": "oak"}, {"material": "oak", "shape": "round"}, {"material": "walnut"}],
                blurb="A {s} dining table with a solid {m} top and sturdy legs."),
    ProductType("dining chair", "furniture", ["oak", "walnut", "velvet", "metal", "rattan"], ["natural", "black", "grey", "green"], 8,
                styles=STYLES_FURN, must=[{"style": "mid-century modern"}] * 3,
                blurb="A {m} dining chair with a contoured back, sold as a set of 2."),
    ProductType("coffee table", "furniture", ["oak", "walnut", "marble", "glass", "metal"], ["natural", "brown", "white", "black", "gold"], 7,
                styles=STYLES_FURN, shapes=["rectangular", "round"],
                must=[{"material": "walnut"}, {"material": "walnut"}, {"material": "walnut", "shape": "round"}, {"material": "oak"}],
                blurb="A {m} coffee table with a lower shelf for books and remotes."),
    ProductType("accent chair", "furniture", ["velvet", "linen", "leather", "boucle"], ["navy", "blue", "sky blue", "green", "mustard", "grey", "blush", "ivory"], 9,
                styles=STYLES_FURN,
                must=[{"material": "velvet", "colour": "navy"}, {"material": "velvet", "colour": "blue"}, {"material": "velvet", "colour": "sky blue"},
                      {"material": "velvet", "colour": "green"}, {"material": "linen", "colour": "blue"}],
                blurb="An upholstered {m} accent chair with a deep seat and tapered wood legs."),
    ProductType("sofa", "furniture", ["velvet", "linen", "leather", "performance fabric"], ["grey", "charcoal", "emerald", "green", "navy", "beige", "rust"], 9,
                sizes=["2-seat", "3-seat", "sectional"], styles=STYLES_FURN,
                must=[{"size": "sectional", "colour": "grey"}, {"size": "sectional", "colour": "charcoal"}, {"size": "sectional", "colour": "light grey"},
                      {"material": "velvet", "colour": "emerald"}, {"material": "velvet", "colour": "green"}, {"material": "velvet", "colour": "sage green"}],
                blurb="A {s} {m} sofa with removable cushions and a kiln-dried hardwood frame."),
    ProductType("bookshelf", "furniture", ["metal", "oak", "pine", "walnut"], ["black", "white", "natural", "brown"], 6,
                sizes=["3-tier", "5-tier"], styles=["industrial", "modern", "farmhouse"], tags=("storage",),
                must=[{"material": "metal", "colour": "black"}, {"material": "metal", "colour": "black"}, {"material": "metal", "colour": "black", "size": "3-tier"}],
                blurb="A {s} {m} bookshelf with open shelves for books and display."),
    ProductType("nightstand", "furniture", ["oak", "pine", "walnut", "rattan"], ["white", "natural", "black", "brown"], 7,
                sizes=["1-drawer", "2-drawer"], styles=STYLES_FURN, tags=("storage",),
                must=[{"colour": "white", "size": "2-drawer"}, {"colour": "white", "size": "1-drawer"}, {"colour": "white"}],
                blurb="A {s} {m} nightstand with soft-close drawers and a spacious top."),
    ProductType("writing desk", "furniture", ["oak", "walnut", "metal", "pine"], ["natural", "white", "black"], 5,
                styles=STYLES_FURN, blurb="A compact {m} writing desk with a cable cut-out and one drawer."),
    ProductType("tv stand", "furniture", ["oak", "walnut", "metal"], ["natural", "black", "white"], 4, sizes=["55 in", "65 in"],
                styles=STYLES_FURN, tags=("storage",), blurb="A {m} TV stand for screens up to {s}, with cable management."),
    # lighting
    ProductType("table lamp", "lighting", ["ceramic", "brass", "glass", "rattan"], ["white", "blue", "green", "gold", "natural"], 8,
                styles=["modern", "coastal", "traditional", "mid-century modern"],
                must=[{"material": "ceramic"}] * 3 + [{"material": "brass"}],
                blurb="A {m} table lamp with a linen drum shade and an in-line switch."),
    ProductType("floor lamp", "lighting", ["brass", "metal", "wood"], ["gold", "black", "natural"], 6, styles=["modern", "mid-century modern", "industrial"],
                must=[{"material": "brass", "colour": "gold"}] * 2 + [{"material": "metal"}],
                blurb="A {m} floor lamp with an adjustable arm, 62 inches tall."),
    ProductType("pendant light", "lighting", ["glass", "rattan", "metal", "brass"], ["black", "natural", "gold", "white"], 6,
                styles=["farmhouse", "modern", "coastal", "industrial"], blurb="A {m} pendant light for kitchen islands, with an adjustable cord."),
    ProductType("chandelier", "lighting", ["metal", "wood", "crystal", "brass"], ["black", "gold", "natural"], 6,
                sizes=["5-light", "6-light", "8-light"], styles=["farmhouse", "modern", "traditional"],
                must=[{"style": "farmhouse"}] * 3, blurb="A {s} {m} chandelier that suits dining rooms and entryways."),
    ProductType("wall sconce", "lighting", ["brass", "metal", "glass"], ["gold", "black", "white"], 4, styles=["modern", "industrial"],
                blurb="A hardwired {m} wall sconce with a frosted glass shade."),
    ProductType("led desk lamp", "lighting", ["aluminum", "plastic"], ["white", "black", "silver"], 4, styles=["modern"],
                blurb="A dimmable LED desk lamp in {m} with a USB charging port and 5 colour temperatures."),
    ProductType("outdoor string lights", "lighting", ["plastic", "glass"], ["black", "white"], 4, sizes=["24 ft", "48 ft"], styles=["modern"],
                tags=("outdoor",), blurb="{s} of weatherproof outdoor string lights with shatterproof bulbs."),
    ProductType("solar path lights", "lighting", ["stainless steel", "plastic"], ["black", "silver"], 3, sizes=["6-pack", "8-pack"], styles=["modern"],
                tags=("outdoor",), blurb="A {s} of solar path lights that charge by day and switch on at dusk."),
    # kitchen
    ProductType("skillet", "kitchen", ["cast iron", "stainless steel", "nonstick"], ["black", "silver", "grey"], 7, sizes=["10 in", "12 in"],
                styles=["classic"], must=[{"material": "cast iron"}] * 3 + [{"material": "nonstick"}] * 2,
                blurb="A {s} {m} skillet for searing, frying and baking."),
    ProductType("frying pan", "kitchen", ["nonstick", "stainless steel", "carbon steel"], ["black", "grey", "silver"], 5, sizes=["8 in", "10 in", "12 in"],
                styles=["classic"], must=[{"material": "nonstick"}] * 3, blurb="A {s} {m} frying pan with a stay-cool handle."),
    ProductType("saucepan", "kitchen", ["stainless steel", "nonstick", "copper"], ["silver", "black", "gold"], 5, sizes=["2 qt", "3 qt"],
                styles=["classic"], must=[{"material": "stainless steel"}] * 3, blurb="A {s} {m} saucepan with a tight-fitting lid."),
    ProductType("dutch oven", "kitchen", ["enameled cast iron", "cast iron"], ["red", "blue", "white", "black", "green"], 5, sizes=["5.5 qt", "7 qt"],
                styles=["classic"], blurb="A {s} {m} dutch oven for braising, stews and bread."),
    ProductType("chef's knife", "kitchen", ["german steel", "japanese steel"], ["black", "silver"], 4, sizes=["8 in"], styles=["classic"],
                blurb="An {s} chef's knife forged from {m} with a full-tang handle."),
    ProductType("cutting board", "kitchen", ["bamboo", "acacia", "walnut", "plastic"], ["natural", "brown", "white"], 6, sizes=["small", "large"],
                styles=["classic"], must=[{"material": "bamboo"}] * 3, blurb="A {s} {m} cutting board with a juice groove."),
    ProductType("mixing bowl set", "kitchen", ["stainless steel", "glass", "ceramic"], ["silver", "white", "multicolour"], 4, styles=["classic"],
                blurb="A nesting set of 5 {m} mixing bowls with lids."),
    ProductType("electric kettle", "kitchen", ["stainless steel", "glass"], ["silver", "black", "white"], 4, sizes=["1.7 l"], styles=["modern"],
                blurb="A {s} {m} electric kettle with auto shut-off."),
    # bath
    ProductType("bath towel set", "bath", ["turkish cotton", "cotton", "bamboo"], ["white", "grey", "navy", "sage green", "blush"], 7, sizes=["6-piece", "4-piece"],
                styles=["classic"], must=[{"material": "turkish cotton"}] * 3, blurb="A {s} {m} bath towel set, soft and quick-drying."),
    ProductType("bath mat", "bath", ["cotton", "memory foam", "teak"], ["white", "grey", "natural", "navy"], 5, styles=["classic"],
                blurb="A non-slip {m} bath mat that dries quickly."),
    ProductType("shower curtain", "bath", ["cotton", "linen", "polyester"], ["white", "grey", "navy", "multicolour"], 5, sizes=["72 x 72 in"],
                styles=["classic", "modern"], blurb="A {s} {m} shower curtain with reinforced grommets."),
    ProductType("over-the-toilet storage cabinet", "bath", ["pine", "mdf", "bamboo"], ["white", "natural", "espresso"], 4, styles=["farmhouse", "modern"],
                tags=("storage",), blurb="A {m} over-the-toilet storage cabinet with two doors and an open shelf."),
    ProductType("medicine cabinet", "bath", ["metal", "mdf"], ["white", "silver", "black"], 4, sizes=["20 x 26 in"], styles=["modern"], tags=("storage",),
                blurb="A {s} recessed or surface-mount medicine cabinet with a mirrored door."),
    ProductType("shower caddy", "bath", ["stainless steel", "bamboo"], ["silver", "natural", "black"], 4, styles=["modern"], tags=("storage",),
                blurb="A rust-resistant {m} shower caddy with three shelves."),
    ProductType("bathroom vanity", "bath", ["oak", "mdf", "marble"], ["white", "natural", "grey", "navy"], 4, sizes=["30 in", "48 in"],
                styles=["modern", "farmhouse"], tags=("storage",), blurb="A {s} bathroom vanity with a {m} cabinet and a ceramic sink."),
    ProductType("towel rack", "bath", ["stainless steel", "brass"], ["silver", "gold", "black"], 3, styles=["modern"],
                blurb="A wall-mounted {m} towel rack with two bars."),
    # rugs
    ProductType("area rug", "rugs", ["wool", "jute", "polypropylene", "cotton"], ["beige", "grey", "navy", "multicolour", "rust", "ivory"], 11,
                sizes=["5 x 8 ft", "8 x 10 ft", "9 x 12 ft"], styles=["traditional", "modern", "bohemian"],
                must=[{"size": "8 x 10 ft"}] * 3 + [{"material": "wool"}] * 3, blurb="A {s} {m} area rug with a low pile that suits busy rooms."),
    ProductType("runner rug", "rugs", ["jute", "wool", "polypropylene"], ["natural", "grey", "multicolour"], 5, sizes=["2 x 8 ft", "2.5 x 10 ft"],
                styles=["traditional", "bohemian"], must=[{"material": "jute"}] * 3, blurb="A {s} {m} runner rug for hallways and kitchens."),
    ProductType("outdoor rug", "rugs", ["polypropylene", "recycled plastic"], ["navy", "green", "beige", "multicolour"], 5, sizes=["5 x 7 ft", "8 x 10 ft"],
                styles=["modern", "coastal"], tags=("outdoor",), blurb="A {s} reversible {m} outdoor rug that resists fading and mildew."),
    # bedding
    ProductType("duvet cover", "bedding", ["cotton", "linen", "percale"], ["white", "grey", "sage green", "blush", "navy"], 8,
                sizes=["twin", "queen", "king"], styles=["classic"], must=[{"size": "king"}] * 3,
                blurb="A {s} {m} duvet cover with button closure and corner ties."),
    ProductType("sheet set", "bedding", ["linen", "cotton", "bamboo", "microfiber"], ["white", "ivory", "grey", "sage green"], 9,
                sizes=["twin", "full", "queen", "king"], styles=["classic"],
                must=[{"material": "linen", "size": "queen"}] * 3 + [{"material": "linen", "size": "king"}],
                blurb="A {s} {m} sheet set: fitted sheet, flat sheet and two pillowcases."),
    ProductType("comforter", "bedding", ["down alternative", "down"], ["white", "grey"], 5, sizes=["queen", "king"], styles=["classic"],
                blurb="An all-season {s} {m} comforter with box stitching."),
    ProductType("weighted blanket", "bedding", ["cotton", "minky"], ["grey", "navy", "blush"], 4, sizes=["15 lb", "20 lb"], styles=["classic"],
                blurb="A {s} {m} weighted blanket filled with glass beads."),
    ProductType("throw blanket", "bedding", ["cotton", "wool", "faux fur"], ["ivory", "grey", "rust", "mustard"], 5, sizes=["50 x 60 in"], styles=["classic", "bohemian"],
                blurb="A {s} {m} throw blanket with tassels."),
    ProductType("bed pillow", "bedding", ["memory foam", "down alternative"], ["white"], 4, sizes=["standard", "king"], styles=["classic"],
                blurb="A {s} {m} bed pillow for side and back sleepers."),
    # outdoor
    ProductType("patio dining set", "outdoor", ["acacia", "aluminum", "wicker"], ["natural", "black", "grey"], 5, sizes=["5-piece", "7-piece"],
                styles=["modern", "coastal"], tags=("outdoor", "patio furniture"), blurb="A {s} {m} patio dining set with weather-resistant cushions."),
    ProductType("adirondack chair", "outdoor", ["acacia", "recycled plastic", "cedar"], ["natural", "white", "navy", "green"], 5, styles=["coastal", "classic"],
                tags=("outdoor", "patio furniture"), blurb="A {m} adirondack chair with a contoured seat and wide armrests."),
    ProductType("outdoor sofa", "outdoor", ["wicker", "aluminum", "teak"], ["grey", "beige", "navy"], 4, sizes=["3-seat", "sectional"], styles=["modern"],
                tags=("outdoor", "patio furniture"), blurb="A {s} {m} outdoor sofa with quick-dry cushions."),
    ProductType("patio umbrella", "outdoor", ["aluminum", "wood"], ["beige", "navy", "green", "red"], 4, sizes=["9 ft", "11 ft"], styles=["classic"],
                tags=("outdoor",), blurb="A {s} {m} patio umbrella with tilt and crank."),
    ProductType("fire pit", "outdoor", ["steel", "cast iron", "concrete"], ["black", "grey", "rust"], 5, sizes=["30 in", "36 in"], styles=["modern", "rustic"],
                tags=("outdoor",), blurb="A {s} wood-burning {m} fire pit with a spark screen."),
    ProductType("planter", "outdoor", ["ceramic", "terracotta", "fiberglass"], ["white", "natural", "black", "green"], 5, sizes=["small", "large"], styles=["modern"],
                tags=("outdoor",), blurb="A {s} {m} planter with a drainage hole."),
    ProductType("hammock", "outdoor", ["cotton", "polyester"], ["multicolour", "natural", "navy"], 3, styles=["coastal"], tags=("outdoor",),
                blurb="A two-person {m} hammock with a steel stand."),
    # storage
    ProductType("storage basket", "storage", ["seagrass", "wicker", "cotton rope", "felt"], ["natural", "white", "grey"], 7, sizes=["small", "large", "set of 3"],
                styles=["bohemian", "farmhouse"], tags=("storage",), must=[{"material": "seagrass"}] * 3,
                blurb="A {s} {m} storage basket with handles, for blankets and toys."),
    ProductType("shoe rack", "storage", ["bamboo", "metal"], ["natural", "black", "white"], 5, sizes=["3-tier", "5-tier"], styles=["modern"], tags=("storage", "shoes"),
                blurb="A {s} {m} shoe rack that holds up to 15 pairs."),
    ProductType("shoe cabinet", "storage", ["mdf", "pine"], ["white", "espresso", "natural"], 3, styles=["modern"], tags=("storage", "shoes"),
                blurb="A slim {m} shoe cabinet with two flip-down drawers."),
    ProductType("closet organizer", "storage", ["wood", "metal", "fabric"], ["white", "grey", "natural"], 4, styles=["modern"], tags=("storage",),
                blurb="An adjustable {m} closet organizer with shelves and hanging rods."),
    ProductType("floating shelves", "storage", ["oak", "walnut", "pine", "metal"], ["natural", "black", "white", "brown"], 6, sizes=["set of 2", "set of 3"],
                styles=["farmhouse", "modern"], tags=("storage",), blurb="{s} {m} floating shelves with hidden brackets."),
    ProductType("storage bins", "storage", ["plastic", "fabric"], ["white", "grey", "natural"], 4, sizes=["set of 4", "set of 6"], styles=["modern"], tags=("storage",),
                blurb="{s} stackable {m} storage bins with lids."),
    ProductType("garment rack", "storage", ["metal", "bamboo"], ["black", "silver", "natural"], 3, styles=["industrial"], tags=("storage",),
                blurb="A freestanding {m} garment rack with a bottom shelf."),
    # tools
    ProductType("cordless drill", "tools", ["lithium-ion"], ["black", "yellow", "red"], 5, sizes=["12V", "20V"], styles=["classic"],
                blurb="A {s} {m} cordless drill with two batteries and a charger."),
    ProductType("drill bit set", "tools", ["titanium", "cobalt"], ["multicolour"], 3, sizes=["29-piece", "100-piece"], styles=["classic"],
                blurb="A {s} {m} drill bit set in a hard case."),
    ProductType("tool set", "tools", ["chrome vanadium steel"], ["black", "red"], 4, sizes=["65-piece", "120-piece"], styles=["classic"],
                blurb="A {s} household tool set in {m}, with a carrying case."),
    ProductType("step ladder", "tools", ["aluminum", "fiberglass"], ["silver", "yellow"], 4, sizes=["2-step", "3-step", "4-step"], styles=["classic"],
                blurb="A {s} {m} step ladder with wide anti-slip steps, rated to 300 lb."),
    ProductType("stud finder", "tools", ["plastic"], ["yellow", "black"], 2, styles=["classic"], blurb="An electronic stud finder with a center-finding display."),
    ProductType("tape measure", "tools", ["steel"], ["yellow", "black"], 2, sizes=["25 ft"], styles=["classic"], blurb="A {s} {m} tape measure with a magnetic hook."),
    # decor
    ProductType("wall mirror", "decor", ["metal", "wood", "rattan"], ["gold", "black", "natural"], 8, sizes=["24 in", "30 in", "36 in"],
                styles=["modern", "bohemian", "traditional"], shapes=["round", "arched", "rectangular"],
                must=[{"shape": "round"}] * 3, blurb="A {s} wall mirror with a {m} frame."),
    ProductType("vase", "decor", ["ceramic", "glass", "stoneware"], ["white", "green", "blue", "natural"], 6, sizes=["small", "large"], styles=["modern"],
                must=[{"size": "large"}] * 3, blurb="A {s} {m} vase for fresh or dried stems."),
    ProductType("throw pillow", "decor", ["velvet", "linen", "cotton"], ["mustard", "green", "blush", "navy", "ivory"], 7, sizes=["18 x 18 in", "20 x 20 in"],
                styles=["modern", "bohemian"], blurb="A {s} {m} throw pillow with a hidden zipper and insert."),
    ProductType("picture frame", "decor", ["metal", "wood"], ["gold", "black", "white", "natural"], 6, sizes=["5 x 7 in", "8 x 10 in"], styles=["modern"],
                must=[{"colour": "gold"}] * 3, blurb="A {s} {m} picture frame with a glass front, set of 3."),
    ProductType("wall art", "decor", ["canvas", "framed print"], ["multicolour", "black", "blue"], 4, sizes=["24 x 36 in"], styles=["modern", "coastal"],
                blurb="A {s} {m} abstract wall art piece, ready to hang."),
    ProductType("wall clock", "decor", ["metal", "wood"], ["black", "gold", "natural"], 4, sizes=["12 in", "24 in"], styles=["farmhouse", "modern"],
                blurb="A {s} silent {m} wall clock."),
    ProductType("scented candle", "decor", ["soy wax"], ["white", "natural"], 4, sizes=["8 oz", "14 oz"], styles=["modern"],
                blurb="A {s} {m} scented candle with a cotton wick."),
]

SECOND_SENTENCES = {
    "furniture": ["Assembly takes about 20 minutes.", "Wipe clean with a damp cloth.", "Ships flat-packed with all hardware."],
    "lighting": ["Bulb not included.", "UL listed.", "Works with standard dimmers."],
    "kitchen": ["Easy to clean.", "Backed by a lifetime warranty.", "Made to last for years of daily use."],
    "bath": ["Machine washable.", "Mounting hardware included.", "Moisture resistant finish."],
    "rugs": ["Spot clean only.", "Use with a rug pad.", "Low-shedding weave."],
    "bedding": ["Machine washable.", "OEKO-TEX certified.", "Breathable for warm sleepers."],
    "outdoor": ["Weather resistant.", "Cover recommended in winter.", "UV-protected finish."],
    "storage": ["Folds flat when not in use.", "No tools needed.", "Holds up to 40 lb."],
    "tools": ["Backed by a 3-year warranty.", "Includes a storage case.", "Ergonomic grip."],
    "decor": ["Hanging hardware included.", "Handmade, so each piece varies.", "Gift ready."],
}


def _pick(rng: random.Random, values: list[str]) -> str:
    return rng.choice(values) if values else ""


def make_products(rng: random.Random) -> list[dict]:
    """All products: the required combos of each type first, then seeded random ones."""
    products: list[dict] = []
    for ptype in TYPES:
        for n in range(ptype.count):
            fixed = ptype.must[n] if n < len(ptype.must) else {}
            colour_choices = ptype.colours + [c for c in [fixed.get("colour")] if c and c not in ptype.colours]
            attrs = {
                "type": ptype.name,
                "category": ptype.category,
                "material": fixed.get("material", _pick(rng, ptype.materials)),
                "colour": fixed.get("colour", _pick(rng, colour_choices)),
                "size": fixed.get("size", _pick(rng, ptype.sizes)),
                "style": fixed.get("style", _pick(rng, ptype.styles)),
                "shape": fixed.get("shape", _pick(rng, ptype.shapes)),
                "brand": rng.choice(BRANDS),
                "tags": ptype.tags,
            }
            attrs["family"] = COLOURS[attrs["colour"]]
            attrs["title"] = make_title(attrs, rng)
            attrs["text"] = make_description(attrs, ptype, rng)
            products.append(attrs)
    rng.shuffle(products)
    for number, product in enumerate(products, start=1):
        product["_id"] = f"hg-{number:04d}"
    return products


def make_title(a: dict, rng: random.Random) -> str:
    """Retail-style titles in a few shapes, as real catalogs mix them."""
    kind = a["type"].title().replace("'S", "'s").replace("Led ", "LED ").replace("Tv ", "TV ")
    shape = f"{a['shape'].title()} " if a["shape"] else ""
    size = a["size"]
    material = a["material"].title()
    colour = a["colour"].title()
    style = a["style"].title() if a["style"] not in ("classic",) else ""
    shapes = [
        f"{a['brand']} {shape}{material} {kind}, {colour}",
        f"{a['brand']} {style + ' ' if style else ''}{shape}{kind} in {colour} {material}",
        f"{shape}{material} {kind} - {colour}{', ' + size if size else ''} | {a['brand']}",
        f"{a['brand']} {size + ' ' if size else ''}{colour} {material} {shape}{kind}",
    ]
    return " ".join(rng.choice(shapes).split())


def make_description(a: dict, ptype: ProductType, rng: random.Random) -> str:
    first = ptype.blurb.format(m=a["material"], c=a["colour"], s=a["size"] or "standard")
    first = fix_articles(first[0].upper() + first[1:])
    colour = f"Finished in {a['colour']}." if a["colour"] != "multicolour" else "Multicolour pattern."
    sentences = [first, colour]
    if rng.random() < 0.6:
        sentences.append(rng.choice(SECOND_SENTENCES[a["category"]]))
    return " ".join(sentences)


def fix_articles(text: str) -> str:
    """'a oak' -> 'an oak', 'A 8 in' -> 'An 8 in': templates do not know the next word."""
    return re.sub(r"\b([Aa]) (?=[aeiouAEIOU]|8\b|8 |8-|11 |18 )", lambda m: m.group(1) + "n ", text)


Rule = Callable[[dict], bool]


def is_(type_: str | tuple[str, ...]) -> Rule:
    types = (type_,) if isinstance(type_, str) else type_
    return lambda p: p["type"] in types


def has(**want: str | tuple[str, ...]) -> Rule:
    def rule(p: dict) -> bool:
        for key, value in want.items():
            values = (value,) if isinstance(value, str) else value
            if p[key] not in values:
                return False
        return True

    return rule


def tagged(tag: str) -> Rule:
    return lambda p: tag in p["tags"]


def all_of(*rules: Rule) -> Rule:
    return lambda p: all(r(p) for r in rules)


def any_of(*rules: Rule) -> Rule:
    return lambda p: any(r(p) for r in rules)


def of(type_: str | tuple[str, ...], **want: str | tuple[str, ...]) -> Rule:
    """A product of this type (or one of these types) with these attributes: the shape of
    most rules, so the query table reads like the queries."""
    return all_of(is_(type_), has(**want))


NEVER: Rule = lambda p: False  # noqa: E731

WOOD = ("oak", "walnut", "pine")
BATH_STORAGE = ("over-the-toilet storage cabinet", "medicine cabinet", "shower caddy", "bathroom vanity")
PANS = ("skillet", "frying pan")
RUGS = ("area rug", "runner rug", "outdoor rug")
LAMPS = ("table lamp", "floor lamp", "led desk lamp")
COOKWARE = ("skillet", "frying pan", "saucepan", "dutch oven")

# query text -> (exact rule, partial rule). Typos and plurals are deliberate.
QUERIES: list[tuple[str, Rule, Rule]] = [
    ("oak dining table", all_of(is_("dining table"), has(material="oak")), any_of(is_("dining table"), all_of(is_("coffee table"), has(material="oak")))),
    ("blue velvet accent chair", all_of(is_("accent chair"), has(material="velvet", family="blue")),
     any_of(all_of(is_("accent chair"), any_of(has(material="velvet"), has(family="blue"))), all_of(is_("sofa"), has(material="velvet", family="blue")))),
    ("bathroom storage", is_(BATH_STORAGE), is_(("towel rack", "storage basket"))),
    ("8x10 area rug", all_of(is_("area rug"), has(size="8 x 10 ft")), any_of(is_("area rug"), all_of(is_("outdoor rug"), has(size="8 x 10 ft")))),
    ("wool area rugs", all_of(is_("area rug"), has(material="wool")), any_of(is_("area rug"), all_of(is_("runner rug"), has(material="wool")))),
    ("cast iron skilet", all_of(is_("skillet"), has(material="cast iron")), any_of(is_(PANS), all_of(is_("dutch oven"), has(material="cast iron")))),
    ("king size duvet cover", all_of(is_("duvet cover"), has(size="king")), any_of(is_("duvet cover"), all_of(is_("comforter"), has(size="king")))),
    ("brass floor lamp", all_of(is_("floor lamp"), has(material="brass")), any_of(is_("floor lamp"), all_of(is_(("table lamp", "wall sconce")), has(material="brass")))),
    ("outdoor lighting", is_(("outdoor string lights", "solar path lights")), NEVER),
    ("round wall mirror", all_of(is_("wall mirror"), has(shape="round")), is_("wall mirror")),
    ("linen sheets queen", all_of(is_("sheet set"), has(material="linen", size="queen")),
     any_of(all_of(is_("sheet set"), any_of(has(material="linen"), has(size="queen"))), all_of(is_("duvet cover"), has(material="linen", size="queen")))),
    ("patio furniture", tagged("patio furniture"), is_(("patio umbrella", "hammock"))),
    ("cordless drill", is_("cordless drill"), is_("drill bit set")),
    ("bamboo cutting board", all_of(is_("cutting board"), has(material="bamboo")), is_("cutting board")),
    ("shoe storage", tagged("shoes"), is_(("closet organizer", "storage bins"))),
    ("led desk lamp", is_("led desk lamp"), is_("table lamp")),
    ("white nightstand with drawers", all_of(is_("nightstand"), has(family="white")), is_("nightstand")),
    ("grey sectional sofa", all_of(is_("sofa"), has(size="sectional", family="grey")),
     any_of(all_of(is_("sofa"), any_of(has(size="sectional"), has(family="grey"))), all_of(is_("outdoor sofa"), has(size="sectional")))),
    ("turkish cotton bath towels", all_of(is_("bath towel set"), has(material="turkish cotton")), is_("bath towel set")),
    ("weighted blanket", is_("weighted blanket"), is_(("throw blanket", "comforter"))),
    ("farmhouse chandelier", all_of(is_("chandelier"), has(style="farmhouse")), any_of(is_("chandelier"), all_of(is_("pendant light"), has(style="farmhouse")))),
    ("ceramic table lamps", all_of(is_("table lamp"), has(material="ceramic")), is_("table lamp")),
    ("jute runner rug", all_of(is_("runner rug"), has(material="jute")), any_of(is_("runner rug"), all_of(is_("area rug"), has(material="jute")))),
    ("nonstick frying pan", all_of(is_(PANS), has(material="nonstick")), any_of(is_(PANS), all_of(is_("saucepan"), has(material="nonstick")))),
    ("stainless steel saucepan", all_of(is_("saucepan"), has(material="stainless steel")), is_("saucepan")),
    ("walnut coffee table", all_of(is_("coffee table"), has(material="walnut")), any_of(is_("coffee table"), all_of(is_("dining table"), has(material="walnut")))),
    ("black metal bookshelf", all_of(is_("bookshelf"), has(material="metal", family="black")), any_of(is_("bookshelf"), is_("floating shelves"))),
    ("seagrass storage baskets", all_of(is_("storage basket"), has(material="seagrass")), is_("storage basket")),
    ("floating shelves", is_("floating shelves"), is_("bookshelf")),
    ("outdoor rug", is_("outdoor rug"), all_of(is_(("area rug", "runner rug")), has(material="polypropylene"))),
    ("throw pillows", is_("throw pillow"), is_("bed pillow")),
    ("gold picture frames", all_of(is_("picture frame"), has(family="gold")), is_("picture frame")),
    ("green velvet sofa", all_of(is_("sofa"), has(material="velvet", family="green")),
     any_of(all_of(is_("sofa"), any_of(has(material="velvet"), has(family="green"))), all_of(is_("accent chair"), has(material="velvet", family="green")))),
    ("dutch oven", is_("dutch oven"), all_of(is_("skillet"), has(material="cast iron"))),
    ("shower curtain", is_("shower curtain"), NEVER),
    ("mid century modern dining chairs", all_of(is_("dining chair"), has(style="mid-century modern")), is_("dining chair")),
    ("chefs knife", is_("chef's knife"), is_("cutting board")),
    ("pendent light", is_("pendant light"), is_(("chandelier", "wall sconce"))),
    ("step ladder", is_("step ladder"), NEVER),
    ("large vase", all_of(is_("vase"), has(size="large")), any_of(is_("vase"), all_of(is_("planter"), has(size="large")))),
    ("fire pit", is_("fire pit"), NEVER),
    ("tv stand", is_("tv stand"), NEVER),
    # q043 onward: the grown query log. Head phrases repeat at several specificities, as in
    # a real log: type only, type + one attribute, type + two, plurals, synonyms, typos and
    # attribute-first orders ("velvet sofa blue"). Same rule style as above.
    # rugs
    ("area rug", of("area rug"), of(("runner rug", "outdoor rug"))),
    ("rugs", of(RUGS), NEVER),
    ("wool area rug", of("area rug", material="wool"), any_of(of("area rug"), of("runner rug", material="wool"))),
    ("8x10 wool area rug", of("area rug", material="wool", size="8 x 10 ft"),
     any_of(of("area rug", material="wool"), of("area rug", size="8 x 10 ft"))),
    ("rug 8x10", of(("area rug", "outdoor rug"), size="8 x 10 ft"), of("area rug")),
    ("area rugs 5x8", of("area rug", size="5 x 8 ft"), of("area rug")),
    ("bohemian area rug", of("area rug", style="bohemian"), of(("area rug", "runner rug"), style="bohemian")),
    ("beige area rug", of("area rug", family="natural"), of("area rug")),
    ("jute rug", of(RUGS, material="jute"), NEVER),
    ("runner rug", of("runner rug"), NEVER),
    ("jute runer rug", of("runner rug", material="jute"), any_of(of("runner rug"), of("area rug", material="jute"))),
    ("outdoor rugs 5x7", of("outdoor rug", size="5 x 7 ft"), of("outdoor rug")),
    # sofas and chairs
    ("sofa", of("sofa"), of("outdoor sofa")),
    ("couch", of("sofa"), of("outdoor sofa")),
    ("sectional sofa", of("sofa", size="sectional"), any_of(of("sofa"), of("outdoor sofa", size="sectional"))),
    ("sectionl couch", of("sofa", size="sectional"), any_of(of("sofa"), of("outdoor sofa", size="sectional"))),
    ("sofa grey sectional", of("sofa", size="sectional", family="grey"), any_of(of("sofa", size="sectional"), of("sofa", family="grey"))),
    ("velvet sofa", of("sofa", material="velvet"), any_of(of("sofa"), of("accent chair", material="velvet"))),
    ("velvet sofa green", of("sofa", material="velvet", family="green"),
     any_of(of("sofa", material="velvet"), of("sofa", family="green"), of("accent chair", material="velvet", family="green"))),
    ("accent chair", of("accent chair"), of("dining chair")),
    ("armchair", of("accent chair"), NEVER),
    ("velvet accent chair", of("accent chair", material="velvet"), any_of(of("accent chair"), of("dining chair", material="velvet"))),
    ("navy velvet accent chair", of("accent chair", material="velvet", colour="navy"),
     any_of(of("accent chair", material="velvet"), of("accent chair", family="blue"))),
    ("accent chair blue", of("accent chair", family="blue"), of("accent chair")),
    # tables, chairs, shelves, desks
    ("dining table", of("dining table"), of("patio dining set")),
    ("dinning table", of("dining table"), of("patio dining set")),
    ("round dining table", of("dining table", shape="round"), of("dining table")),
    ("round oak dining table", of("dining table", material="oak", shape="round"),
     any_of(of("dining table", material="oak"), of("dining table", shape="round"))),
    ("dining chairs", of("dining chair"), of("accent chair")),
    ("velvet dining chairs", of("dining chair", material="velvet"), any_of(of("dining chair"), of("accent chair", material="velvet"))),
    ("coffee table", of("coffee table"), NEVER),
    ("cofee table", of("coffee table"), NEVER),
    ("bookshelf", of("bookshelf"), of("floating shelves")),
    ("bookcase", of("bookshelf"), of("floating shelves")),
    ("nightstand", of("nightstand"), NEVER),
    ("bedside table", of("nightstand"), NEVER),
    ("nightstand white", of("nightstand", family="white"), of("nightstand")),
    ("desk", of("writing desk"), NEVER),
    ("tv stand 65 inch", of("tv stand", size="65 in"), of("tv stand")),
    # lighting
    ("lamp", of(LAMPS), NEVER),
    ("table lamp", of("table lamp"), of(("floor lamp", "led desk lamp"))),
    ("brass table lamp", of("table lamp", material="brass"), any_of(of("table lamp"), of(("floor lamp", "wall sconce"), material="brass"))),
    ("floor lamp", of("floor lamp"), of("table lamp")),
    ("desk lamp", of("led desk lamp"), of("table lamp")),
    ("pendant light", of("pendant light"), of(("chandelier", "wall sconce"))),
    ("black pendant light", of("pendant light", family="black"), any_of(of("pendant light"), of(("chandelier", "wall sconce"), family="black"))),
    ("chandelier", of("chandelier"), of("pendant light")),
    ("crystal chandelier", of("chandelier", material="crystal"), of("chandelier")),
    ("wall sconce", of("wall sconce"), NEVER),
    ("string lights", of("outdoor string lights"), of("solar path lights")),
    ("solar lights", of("solar path lights"), of("outdoor string lights")),
    # kitchen
    ("skillet", of("skillet"), of("frying pan")),
    ("cast iron skillet", of("skillet", material="cast iron"), any_of(of(PANS), of("dutch oven", material="cast iron"))),
    ("12 inch cast iron skillet", of("skillet", material="cast iron", size="12 in"),
     any_of(of("skillet", material="cast iron"), of("skillet", size="12 in"))),
    ("frying pan", of("frying pan"), of("skillet")),
    ("non stick frying pan 10 inch", of(PANS, material="nonstick", size="10 in"), any_of(of(PANS, material="nonstick"), of(PANS, size="10 in"))),
    ("pots and pans", of(COOKWARE), NEVER),
    ("saucepan", of("saucepan"), NEVER),
    ("dutch ovens", of("dutch oven"), of("skillet", material="cast iron")),
    ("kitchen knife", of("chef's knife"), NEVER),
    ("cutting board", of("cutting board"), NEVER),
    ("mixing bowls", of("mixing bowl set"), NEVER),
    ("electric kettle", of("electric kettle"), NEVER),
    # bath
    ("bath towels", of("bath towel set"), NEVER),
    ("bath mat", of("bath mat"), NEVER),
    ("bath rug", of("bath mat"), NEVER),
    ("medicine cabinet", of("medicine cabinet"), of(("bathroom vanity", "over-the-toilet storage cabinet"))),
    ("shower caddy", of("shower caddy"), NEVER),
    ("bathroom vanity", of("bathroom vanity"), of("medicine cabinet")),
    ("over the toilet storage", of("over-the-toilet storage cabinet"), of(BATH_STORAGE)),
    ("towel rack", of("towel rack"), NEVER),
    # bedding
    ("duvet cover", of("duvet cover"), of("comforter")),
    ("duvet cover king", of("duvet cover", size="king"), any_of(of("duvet cover"), of("comforter", size="king"))),
    ("navy duvet cover king", of("duvet cover", family="blue", size="king"), any_of(of("duvet cover", family="blue"), of("duvet cover", size="king"))),
    ("sheets", of("sheet set"), NEVER),
    ("queen sheets", of("sheet set", size="queen"), of("sheet set")),
    ("linen sheets", of("sheet set", material="linen"), any_of(of("sheet set"), of("duvet cover", material="linen"))),
    ("sheets linen king", of("sheet set", material="linen", size="king"), any_of(of("sheet set", material="linen"), of("sheet set", size="king"))),
    ("comforter", of("comforter"), of("duvet cover")),
    ("weighted blankets", of("weighted blanket"), of(("throw blanket", "comforter"))),
    ("throw blanket", of("throw blanket"), of("weighted blanket")),
    ("bed pillows", of("bed pillow"), of("throw pillow")),
    ("memory foam pillow", of("bed pillow", material="memory foam"), of("bed pillow")),
    # outdoor
    ("outdoor furniture", tagged("patio furniture"), of(("patio umbrella", "hammock"))),
    ("patio dining set", of("patio dining set"), of(("adirondack chair", "outdoor sofa"))),
    ("adirondack chair", of("adirondack chair"), NEVER),
    ("adirondak chairs", of("adirondack chair"), NEVER),
    ("patio chairs", of("adirondack chair"), of(("patio dining set", "outdoor sofa"))),
    ("outdoor sofa", of("outdoor sofa"), of(("patio dining set", "adirondack chair"))),
    ("patio umbrella", of("patio umbrella"), NEVER),
    ("fire pits", of("fire pit"), NEVER),
    ("planter", of("planter"), of("vase")),
    ("hammock with stand", of("hammock"), NEVER),
    # storage
    ("storage baskets", of("storage basket"), of("storage bins")),
    ("storage bins with lids", of("storage bins"), of("storage basket")),
    ("shoe rack", of("shoe rack"), of("shoe cabinet")),
    ("shoe organizer", tagged("shoes"), of(("closet organizer", "storage bins"))),
    ("closet organizer", of("closet organizer"), of(("garment rack", "storage bins"))),
    ("wall shelves", of("floating shelves"), of("bookshelf")),
    ("oak floating shelves", of("floating shelves", material="oak"), any_of(of("floating shelves"), of("bookshelf", material="oak"))),
    ("garment rack", of("garment rack"), of("closet organizer")),
    # tools
    ("drill", of("cordless drill"), of("drill bit set")),
    ("20v cordless drill", of("cordless drill", size="20V"), of("cordless drill")),
    ("drill bits", of("drill bit set"), of("cordless drill")),
    ("tool set", of("tool set"), NEVER),
    ("ladder", of("step ladder"), NEVER),
    ("stud finder", of("stud finder"), of("tape measure")),
    ("tape measure", of("tape measure"), of("tool set")),
    # decor
    ("wall mirror", of("wall mirror"), of("medicine cabinet")),
    ("round mirror", of("wall mirror", shape="round"), of("wall mirror")),
    ("black round mirror", of("wall mirror", shape="round", family="black"),
     any_of(of("wall mirror", shape="round"), of("wall mirror", family="black"))),
    ("vase", of("vase"), of("planter")),
    ("throw pillow", of("throw pillow"), of("bed pillow")),
    ("mustard throw pillow", of("throw pillow", family="yellow"), of("throw pillow")),
    ("picture frame", of("picture frame"), NEVER),
    ("wall art", of("wall art"), of("picture frame")),
    ("wall clock", of("wall clock"), NEVER),
    ("candles", of("scented candle"), NEVER),
]


def judge(products: list[dict], rng: random.Random) -> tuple[list[dict], list[tuple[str, str, int]]]:
    """Queries and qrels: every exact/partial product, then hard and random negatives."""
    texts = [text for text, _, _ in QUERIES]
    if len(set(texts)) != len(texts):
        raise SystemExit(f"duplicate query texts: {sorted({t for t in texts if texts.count(t) > 1})}")
    queries, qrels = [], []
    for number, (text, exact, partial) in enumerate(QUERIES, start=1):
        qid = f"q{number:03d}"
        queries.append({"_id": qid, "text": text})
        judged: dict[str, int] = {}
        for p in products:
            if exact(p):
                judged[p["_id"]] = 2
            elif partial(p):
                judged[p["_id"]] = 1
        if len(judged) < 3 or 2 not in judged.values():
            raise SystemExit(f"query {text!r} has {len(judged)} relevant products and needs at least 3, "
                             "one of them exact; adjust the vocabulary")
        categories = {p["category"] for p in products if p["_id"] in judged}
        hard = [p["_id"] for p in products if p["_id"] not in judged and p["category"] in categories]
        other = [p["_id"] for p in products if p["_id"] not in judged and p["category"] not in categories]
        n_negative = max(MIN_IRRELEVANT, JUDGED_PER_QUERY - len(judged))
        n_hard = min(len(hard), (2 * n_negative) // 3)
        negatives = rng.sample(hard, n_hard) + rng.sample(other, n_negative - n_hard)
        for pid in negatives:
            judged[pid] = 0
        qrels.extend((qid, pid, score) for pid, score in sorted(judged.items()))
    return queries, qrels


def write(out: Path, products: list[dict], queries: list[dict], qrels: list[tuple[str, str, int]]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for p in sorted(products, key=lambda p: p["_id"]):
            f.write(json.dumps({"_id": p["_id"], "title": p["title"], "text": p["text"]}, ensure_ascii=False) + "\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    with (out / "qrels.tsv").open("w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for qid, pid, score in qrels:
            f.write(f"{qid}\t{pid}\t{score}\n")
    (out / "cogr-dataset.json").write_text(json.dumps({"name": "homegoods", "relevance_threshold": 1}, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    products = make_products(rng)
    queries, qrels = judge(products, rng)
    write(args.out, products, queries, qrels)
    print(f"{len(products)} products, {len(queries)} queries, {len(qrels)} judgements -> {args.out}")


if __name__ == "__main__":
    main()
