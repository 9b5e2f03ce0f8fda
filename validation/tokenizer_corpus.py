#!/usr/bin/env python3
"""Writes validation/data/tokenizer_corpus.jsonl: the strings inferlab's tokenizer must encode
exactly as Hugging Face `tokenizers` does (issue 18). One {"text": ...} per line, the format of
`inferlab tokenize --input`. Deterministic (fixed seed, Python's stdlib only); rerun after
editing and commit the result, then regenerate the reference ids on the GPU machine with
validation/tokenizer_reference.py.

Usage: python3 validation/tokenizer_corpus.py [--out PATH]
"""
import argparse
import json
import os
import random
import unicodedata

SEED = 20261123
rng = random.Random(SEED)

SCRIPTS = {
    # name: (letter ranges, sample words)
    "latin": ([(0x61, 0x7A), (0xE0, 0xFF), (0x100, 0x17F), (0x1E00, 0x1EFF)],
              ["café", "naïve", "über", "Straße", "façade", "jalapeño", "Ærøskøbing", "İstanbul",
               "ĳssel", "Łódź", "Dvořák", "smörgåsbord", "Nguyễn", "coöperate", "résumé"]),
    "cyrillic": ([(0x430, 0x44F), (0x410, 0x42F), (0x451, 0x451)],
                 ["Привет", "мир", "съешь", "ещё", "этих", "мягких", "французских", "булок", "Ёлка"]),
    "greek": ([(0x3B1, 0x3C9), (0x391, 0x3A9), (0x3AC, 0x3CE)],
              ["Καλημέρα", "κόσμε", "ἀρχή", "λόγος", "Ωμέγα", "ΣΊΣΥΦΟΣ", "ψυχή"]),
    "arabic": ([(0x621, 0x64A), (0x64B, 0x652)],
               ["مرحبا", "بالعالم", "السَّلَامُ", "عَلَيْكُمْ", "كتاب", "١٢٣", "الْعَرَبِيَّة"]),
    "hebrew": ([(0x5D0, 0x5EA), (0x5B0, 0x5BC)],
               ["שלום", "עולם", "בְּרֵאשִׁית", "תודה", "ירושלים"]),
    "devanagari": ([(0x915, 0x939), (0x93E, 0x94D), (0x905, 0x914)],
                   ["नमस्ते", "दुनिया", "हिन्दी", "संस्कृतम्", "क्षत्रिय", "०१२३"]),
    "thai": ([(0xE01, 0xE2E), (0xE30, 0xE3A), (0xE40, 0xE4E)],
             ["สวัสดี", "ชาวโลก", "ภาษาไทย", "กรุงเทพมหานคร", "๑๒๓"]),
    "cjk": ([(0x4E00, 0x9FFF), (0x3041, 0x3096), (0x30A1, 0x30FA)],
            ["你好", "世界", "東京都", "こんにちは", "カタカナ", "漢字テスト", "中华人民共和国", "。、「」"]),
    "hangul": ([(0xAC00, 0xD7A3), (0x1100, 0x1112)],
               ["안녕하세요", "세계", "한국어", "대한민국", "ㄱㄴㄷ"]),
}

EMOJI = ["😀", "😂", "🥲", "🤖", "🚀", "🔥", "❤️", "✨", "👍", "🙏", "🎉", "🌍", "🍕", "🐍", "⚡",
         "☕", "✅", "❌", "🇺🇸", "🇯🇵", "🇩🇪", "🏳️‍🌈", "🏴‍☠️", "1️⃣", "#️⃣", "©️", "™️"]
ZWJ = ["👨‍👩‍👧‍👦", "👩‍💻", "🧑🏽‍🚀", "👨🏿‍🦰", "👩‍❤️‍💋‍👨", "🐻‍❄️", "❤️‍🔥", "🫱🏼‍🫲🏿",
       "👁️‍🗨️", "🧔‍♂️", "🏃‍♀️‍➡️"]
SKIN = ["\U0001F3FB", "\U0001F3FC", "\U0001F3FD", "\U0001F3FE", "\U0001F3FF"]
HANDS = ["👋", "👍", "🤞", "✌", "🙌", "👏", "🤙", "💪"]

ENGLISH = ("the of and to in is that it was for on are as with his they at be this from have "
           "or by one had not but what all were when we there can an your which their said if "
           "do will each about how up out them then she many some so these would other into has "
           "more her two like him see time could no make than first been its who now people my "
           "made over did down only way find use may water long little very after words called "
           "just where most know tokenizer inference latency throughput GPU kernel memory").split()

SPECIAL = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>",
           "<|end_header_id|>", "<|reserved_special_token_0|>", "<|reserved_special_token_17|>",
           "<|finetune_right_pad_id|>", "<|eom_id|>", "<|python_tag|>", "<|im_start|>",
           "<|im_end|>", "<|endoftext|>", "<s>", "</s>"]
SPECIAL_PARTIAL = ["<|eot_id", "<|eot_id|", "|eot_id|>", "<|begin_of_text", "<|EOT_ID|>",
                   "< |eot_id|>", "<<|eot_id|>>", "<|<|eot_id|>|>", "<|reserved_special_token_999|>"]

UNICODE_SPACES = ["\u00a0", "\u1680", "\u2000", "\u2003", "\u2009", "\u200a", "\u202f",
                  "\u205f", "\u3000", "\u2028", "\u2029", "\u0085", "\u180e", "\u200b",
                  "\ufeff", "\u000b", "\u000c", "\u001c", "\u001f"]

CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Re", "'rE",
                "'VE", "'vE", "'M", "'LL", "'Ll", "'D", "'ſ", "’s", "’t", "''s", "'", "'x"]

DIGIT_SETS = ["0123456789", "٠١٢٣٤٥٦٧٨٩", "०१२३४५६७८९", "０１２３４５６７８９", "𝟎𝟏𝟐𝟑𝟒𝟓𝟔𝟕𝟖𝟗",
              "①②③④⑤", "ⅠⅡⅢⅣⅤ", "½¼¾²³"]


def assigned_code_points():
    """Unicode scalar values assigned in this Python's Unicode (not Cn, not surrogates)."""
    cps = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        if unicodedata.category(chr(cp)) != "Cn":
            cps.append(cp)
    return cps


ASSIGNED = assigned_code_points()
ASSIGNED_BMP = [cp for cp in ASSIGNED if 0x800 <= cp <= 0xFFFF]


def pick_range(ranges):
    lo, hi = rng.choice(ranges)
    return chr(rng.randint(lo, hi))


def script_word(name):
    ranges, words = SCRIPTS[name]
    if rng.random() < 0.5:
        return rng.choice(words)
    return "".join(pick_range(ranges) for _ in range(rng.randint(1, 9)))


def sep():
    return rng.choice([" ", " ", " ", ", ", ". ", "\n", "  ", "\t", "! ", "? ", "; ", " - ",
                       "\r\n", "\n\n", ": ", "。", "、", " (", ") "])


def sentence(words):
    out = ""
    for i, w in enumerate(words):
        out += w
        if i + 1 < len(words):
            out += sep()
    return out


def english_words(n):
    ws = [rng.choice(ENGLISH) for _ in range(n)]
    if ws and rng.random() < 0.5:
        ws[0] = ws[0].capitalize()
    return ws


def number():
    kind = rng.randrange(8)
    if kind == 0:
        return "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 40)))
    if kind == 1:
        return f"{rng.randint(0, 10**9):,}"
    if kind == 2:
        return f"{rng.uniform(-1e6, 1e6):.{rng.randint(0, 8)}f}"
    if kind == 3:
        return f"{rng.uniform(1e-30, 1e30):e}"
    if kind == 4:
        ds = rng.choice(DIGIT_SETS)
        return "".join(rng.choice(ds) for _ in range(rng.randint(1, 12)))
    if kind == 5:
        return f"{rng.randint(1900, 2100)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if kind == 6:
        return f"0x{rng.getrandbits(rng.choice([8, 16, 32, 64])):x}"
    return f"v{rng.randint(0, 20)}.{rng.randint(0, 99)}.{rng.randint(0, 999)}"


def ident():
    base = rng.choice(["x", "i", "idx", "value", "tokenIds", "kv_cache", "num_heads", "self",
                       "HTTPServer", "getUserName", "__init__", "_private", "MAX_LEN", "π", "ñame"])
    if rng.random() < 0.3:
        base += str(rng.randint(0, 99))
    return base


def code():
    i = ident()
    j = ident()
    indent = rng.choice(["    ", "  ", "\t", "        ", "\t\t"])
    snippets = [
        f"def {i}({j}, *args, **kwargs):\n{indent}return {j} ** 2 + {rng.randint(0, 999)}\n",
        f"for (int {i} = 0; {i} < {rng.randint(1, 4096)}; ++{i}) {{\n{indent}{j}[{i}] += {i} * 3;\n}}",
        f"const {i} = async ({j}) => {{ await fetch(`/api/${{{j}}}`); }};",
        f"fn {i}(&mut self, {j}: Vec<u32>) -> Result<(), Box<dyn Error>> {{\n{indent}Ok(())\n}}",
        f"func {i}({j} int) (int, error) {{\n{indent}if {j} != nil {{ return 0, err }}\n}}",
        f"SELECT {i}, COUNT(*) AS n FROM {j} WHERE {i} >= {rng.randint(0, 100)} GROUP BY {i};",
        f"<div class=\"{i}\" id='{j}'>\n{indent}<a href=\"https://example.com/?q={i}&x=1\">link</a>\n</div>",
        json.dumps({i: [rng.randint(0, 1000), None, True, {j: "str\\n"}]}, indent=rng.choice([None, 2, 4])),
        f"#include <vector>\nint main() {{ std::vector<float> {i}({rng.randint(1, 99)}); return 0; }}\n",
        f"if [ -f \"${i}\" ]; then\n{indent}echo \"$({j} --flag=1)\" >&2 || exit 1\nfi",
        f"{i} = lambda {j}: [{j}[k] for k in range({j}.__len__()) if k % 2 == 0]  # comment",
        f"    /* {i} */ {j}->{i} = (uint8_t*)malloc(sizeof(*{j}) << 4);\r\n",
        f"x = {i}!==null ? {j}?.{i} ?? 0 : -1;;  // ===> !== <= >= || && ::",
        f"@dataclass\nclass {i.title()}:\n{indent}{j}: int = {rng.randint(0, 9)}\n{indent}name: str = 'a'\n",
    ]
    return rng.choice(snippets)


def emoji_text():
    parts = []
    for _ in range(rng.randint(1, 8)):
        r = rng.random()
        if r < 0.3:
            parts.append(rng.choice(EMOJI))
        elif r < 0.5:
            parts.append(rng.choice(ZWJ))
        elif r < 0.7:
            parts.append(rng.choice(HANDS) + rng.choice(SKIN))
        elif r < 0.8:
            parts.append(rng.choice(SKIN))  # a lone modifier
        else:
            parts.append(" ".join(english_words(rng.randint(1, 4))))
    return rng.choice(["", " ", "\n"]).join(parts)


def whitespace_text():
    pieces = []
    for _ in range(rng.randint(1, 10)):
        r = rng.random()
        if r < 0.4:
            pieces.append(rng.choice([" ", "\t", "\n", "\r\n", "\r", "  ", "   \n", "\n\n\n", " \t "])
                          * rng.randint(1, 12))
        elif r < 0.55:
            pieces.append(rng.choice(UNICODE_SPACES) * rng.randint(1, 3))
        elif r < 0.8:
            pieces.append(rng.choice(ENGLISH))
        else:
            pieces.append(rng.choice([".", "!", "?", "(", ")", "'", "\"", "-", "123", "ü"]))
    return "".join(pieces)


def contraction_text():
    w = rng.choice(ENGLISH + ["I", "YOU", "They", "it", "don", "can", "we", "O", "rock'n"])
    if rng.random() < 0.3:
        w = w.upper()
    c = rng.choice(CONTRACTIONS)
    tail = rng.choice(["", " ", " ok", "s", "'s", "\n", "!", "123", " 's"])
    return rng.choice(["", " ", "x", "'"]) + w + c + tail + rng.choice(["", " " + " ".join(english_words(3))])


def special_text():
    parts = []
    for _ in range(rng.randint(1, 6)):
        r = rng.random()
        if r < 0.4:
            parts.append(rng.choice(SPECIAL))
        elif r < 0.55:
            parts.append(rng.choice(SPECIAL_PARTIAL))
        else:
            parts.append(" ".join(english_words(rng.randint(1, 4))))
    return "".join(p if rng.random() < 0.5 else rng.choice([" ", "\n", "\n\n", "  "]) + p for p in parts)


def random_unicode():
    n = rng.randint(1, 60)
    chars = []
    for _ in range(n):
        r = rng.random()
        if r < 0.55:
            chars.append(chr(rng.choice(ASSIGNED)))
        elif r < 0.7:
            chars.append(chr(rng.randint(0x20, 0x7E)))
        elif r < 0.8:
            chars.append(rng.choice([" ", "\n", "\t", "  "]))
        elif r < 0.9:
            chars.append(chr(rng.randint(0x80, 0x7FF)))
        else:
            chars.append(chr(rng.choice(ASSIGNED_BMP)))
    return "".join(chars)


def random_ascii():
    alphabet = ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                "          \t\n\r!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 120)))


def multilingual():
    words = []
    for _ in range(rng.randint(2, 25)):
        r = rng.random()
        if r < 0.6:
            words.append(script_word(rng.choice(list(SCRIPTS))))
        elif r < 0.8:
            words.append(rng.choice(ENGLISH))
        elif r < 0.9:
            words.append(number())
        else:
            words.append(rng.choice(EMOJI + ZWJ))
    return sentence(words)


def long_document(target_chars):
    paragraphs = []
    total = 0
    while total < target_chars:
        r = rng.random()
        if r < 0.45:
            p = sentence(english_words(rng.randint(20, 120)))
        elif r < 0.65:
            p = sentence([script_word(rng.choice(list(SCRIPTS))) for _ in range(rng.randint(10, 60))])
        elif r < 0.85:
            p = code()
        else:
            p = "\n".join("| " + " | ".join(number() for _ in range(4)) + " |" for _ in range(5))
        paragraphs.append(p)
        total += len(p)
    return rng.choice(["\n\n", "\n", "\r\n\r\n"]).join(paragraphs)


def fixed_cases():
    cases = [
        "", " ", "  ", "\n", "\r\n", "\t", "Hello, world", "Hello world!", " Hello", "hello ",
        "I'm", "I'M", "you're", "YOU'RE", "we've", "they'll", "she'd", "it's", "It'S", "don't",
        "DON'T", "rock'n'roll", "'s", "''", "'''", "l'homme", "dell'arte",
        "1", "12", "123", "1234", "12345", "123456", "1234567", "3.14159", "1,000,000",
        "-42", "+1", "1e10", "0.000001", "2026-11-23T13:43:07Z", "v1.2.3", "127.0.0.1",
        "   leading", "trailing   ", "mid   dle", "a\n\nb", "a\r\n\r\nb", "a \n b", "a\t\tb",
        "line1\nline2\r\nline3\rline4", "\n\n\n\n", "    \n    \n", " \r\n ", "x\u00a0y",
        "x\u3000y", "\u180e", "x\u180ey", " \u180e ", "a\u2028b", "a\u0085b", "\u200b",
        "\ufeffBOM", "Straße", "ﬁnance", "ǅ", "ﬀ", "İ", "ß", "ſ's", "'ſ", "K", "Å",
        "e\u0301", "n\u0303", "a\u0300\u0301\u0302\u0303", "\u0301", "한국어", "日本語のテキスト",
        "中文，标点。", "عربي", "עברית", "हिन्दी", "ไทย", "Ελληνικά", "Русский", "👍", "👍🏽",
        "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇺🇸🇯🇵", "😀😀😀", " 😀", "a😀b",
        "<|begin_of_text|>", "<|eot_id|>", "<|begin_of_text|>Hello", "Hello<|eot_id|>",
        " <|eot_id|> ", "<|eot_id|><|eot_id|>", "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
        "<|eot_id", "<|", "|>", "<<|eot_id|>>", "<|reserved_special_token_250|>",
        "\x00", "a\x00b", "\x01\x02\x03", "\x7f", "\x1b[31mred\x1b[0m",
        "https://example.com/path?query=1&x=%20#frag", "user@example.com", "C:\\Users\\x\\file.txt",
        "#!/bin/sh", "==>", "!==", "...", "…", "---", "***", "~~~", "```python\nprint(1)\n```",
        "$$\\int_0^1 x^2\\,dx$$", "∀x∈ℝ: x²≥0", "½ + ¼ = ¾", "①②③", "ⅫⅣ", "٣٤٥", "१२३",
        "１２３４", "𝟏𝟐𝟑", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𓀀𓀁", "🀄", "\U0010fffd", "\ue000", "\U000f0000",
        # NFC (Qwen normalizes): combining marks out of canonical order, conjoining Hangul
        # jamo, singletons, composition exclusions, Vietnamese stacked marks.
        "a\u0301\u0323", "a\u0323\u0301", "q\u0307\u0323", "\u1100\u1161\u11a8",
        "\u1100\u1161 \u110b\u1175", "\u212b\u2126\u212a", "\u0958\u0959", "\u0344",
        "Vie\u0302\u0323t Nam", "\u0065\u0302\u0301", "\u1e9b\u0323", "\uac00\u11a8",
        "\u0301a", "a\u0301" * 50, "\u0301" * 200,
        "A" * 1000, " " * 1000, "\n" * 500, "1" * 1000, "ab" * 500, "😀" * 300, "'s" * 300,
        "a " * 500, "! " * 500, "\t" * 300 + "x", "x" + " " * 700 + "y", "\r\n" * 300,
    ]
    for c in range(128):
        cases.append(chr(c))
        cases.append("a" + chr(c) + "b")
        cases.append(" " + chr(c) + " ")
    for c in range(0x80, 0x250):
        cases.append(chr(c))
    for n in range(1, 41):
        cases.append("7" * n)
        cases.append("x" + "1234567890"[:n % 10 + 1] * (n // 10 + 1) + "y")
        cases.append(" " * n + "word")
        cases.append("word" + " " * n + "word")
        cases.append("\n" * n + " " * n)
    return cases


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--out", default=os.path.join(here, "data", "tokenizer_corpus.jsonl"))
    args = parser.parse_args()

    texts = fixed_cases()
    generators = [
        (multilingual, 900), (lambda: sentence(english_words(rng.randint(1, 40))), 400),
        (emoji_text, 350), (code, 450), (lambda: sentence([number() for _ in range(rng.randint(1, 8))]), 350),
        (number, 250), (whitespace_text, 400), (contraction_text, 350), (special_text, 300),
        (random_unicode, 900), (random_ascii, 500),
    ]
    for name in SCRIPTS:
        generators.append((lambda name=name: sentence([script_word(name) for _ in range(rng.randint(1, 20))]), 60))
    for gen, count in generators:
        texts.extend(gen() for _ in range(count))
    for _ in range(24):
        texts.append(long_document(rng.randint(3000, 14000)))

    for t in texts:
        t.encode("utf-8")  # no lone surrogates
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8", newline="\n") as f:
        for t in texts:
            f.write(json.dumps({"text": t}, ensure_ascii=False) + "\n")
    size = os.path.getsize(args.out)
    print(f"wrote {len(texts)} strings, {size} bytes, to {args.out}")


if __name__ == "__main__":
    main()
