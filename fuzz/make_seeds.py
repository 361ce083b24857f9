#!/usr/bin/env python3
"""Writes the committed seed corpora of the fuzz targets (docs/FUZZING.md).

Seeds are small, real inputs: notations from the docs' sample game and the
tests, a few records, encoded valid requests (protobuf written by hand here,
field numbers from proto/), and move sequences. Run from anywhere; rewrites
fuzz/corpus/*/seed-*."""

import hashlib
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
SAMPLE = (HERE.parent / "docs/pictures/sample-game.txt").read_text()
SAMPLE_MOVES = [l for l in SAMPLE.splitlines()[4:] if l.strip()]
CONNECTION = ["SE@E1:E2,E3", "SE@M5:M6,M7", "SE@E4:E5,E6", "SE@M8:M9,M10",
              "SE@E7:E8,E9", "SE@M11:M12,M13", "SE@E10:E11,E12", "SE@O9:O10,O11",
              "SM@G14:F13,H15", "T@O13:P13,P14", "T@I16:J16,J17"]
TOKEN = "0123456789abcdef0123456789abcdef"


def write(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    (HERE / "corpus" / target / f"seed-{name}").write_bytes(data)


# -- protobuf, by hand ------------------------------------------------------
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def f_varint(field, n):
    return varint(field << 3) + varint(n)


def f_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(field << 3 | 2) + varint(len(data)) + data


def f_map(field, mapping):
    return b"".join(f_bytes(field, f_bytes(1, k) + f_bytes(2, v)) for k, v in mapping.items())


def move_notation(text):  # referee.v1.Move{punct: punct.v1.Move{notation}}
    return f_bytes(1, f_bytes(3, text))


def move_place(code, punct, rotation):
    return f_bytes(1, f_bytes(1, f_bytes(1, code) + f_bytes(2, punct) + f_varint(3, rotation)))


def move_shift(frm, to, rotation):
    return f_bytes(1, f_bytes(2, f_bytes(1, frm) + f_bytes(2, to) + f_varint(3, rotation)))


def rules(variant=1, end_on_supply=1, max_plies=None):
    opts = f_varint(1, variant) + f_varint(2, end_on_supply)
    if max_plies is not None:
        opts += f_varint(3, max_plies)
    return f_bytes(1, opts)  # GameRules{punct}


REQUESTS = ["CreateGame", "GetGame", "ListGames", "ListLegalMoves", "SubmitMove",
            "WatchGame", "Resign", "OfferDraw", "AcceptDraw", "AbortGame",
            "ValidateMove", "ExportGame", "ImportGame", "ClaimVictory", "RenderPosition"]


def request(name, body):
    return bytes([REQUESTS.index(name)]) + body


def main():
    for target in ("notation", "record", "request", "moves"):
        for old in (HERE / "corpus" / target).glob("seed-*"):
            old.unlink()

    notations = sorted(set(SAMPLE_MOVES[:12] + CONNECTION[:4])) + [
        "se @ e5 : g5 , f5", "e5>h8:i8,j8", "T@I16:J16,J17", "AM@F11:G12,E11", "SE@E5:F5,F5"]
    for i, text in enumerate(notations):
        write("notation", f"{i:02}", text)

    write("record", "sample-game", SAMPLE)
    write("record", "resigned",
          "game: punct\nvariant: basic\nevent: club night\nwhite: ana\nresult: black RESIGNATION\n\n"
          + "\n".join(CONNECTION[:3]) + "\n")
    write("record", "options",
          "# a comment\ngame: punct\nvariant: standard\nend_on_supply: both_exhausted\n"
          "max_plies: 12\nrepetition_limit: 2\n\n" + "\n".join(SAMPLE_MOVES[:6]) + "\n")
    write("record", "connection", "game: punct\nresult: white CONNECTION\n\n" + "\n".join(CONNECTION) + "\n")
    write("record", "unfinished", "\n".join(CONNECTION[:5]) + "\n")

    gid = "00112233445566778899aabbccddeeff"
    seeds = {
        "create": request("CreateGame", f_bytes(1, rules()) + f_map(2, {"event": "cup"})),
        "create-timed": request("CreateGame", f_bytes(1, rules(2, 2, 40))
                                + f_bytes(3, f_bytes(1, f_varint(1, 60000) + f_varint(2, 1000)))),
        "get": request("GetGame", f_bytes(1, gid)),
        "list": request("ListGames", f_varint(1, 10) + f_bytes(2, "3") + f_varint(3, 1) + f_map(4, {"a": "b"})),
        "legal": request("ListLegalMoves", f_bytes(1, gid) + f_varint(2, 1)),
        "submit-notation": request("SubmitMove", f_bytes(1, gid) + f_bytes(2, TOKEN)
                                   + f_bytes(3, move_notation("SE@E5:F5,G5")) + f_bytes(5, "r1")),
        "submit-place": request("SubmitMove", f_bytes(1, gid) + f_bytes(2, TOKEN)
                                + f_bytes(3, move_place("AM", "F11", 2)) + f_varint(4, 0)),
        "submit-shift": request("SubmitMove", f_bytes(1, gid) + f_bytes(2, TOKEN)
                                + f_bytes(3, move_shift("F11", "K11", 1)) + f_varint(4, 2)),
        "watch": request("WatchGame", f_bytes(1, gid) + f_varint(2, 3) + f_bytes(3, TOKEN)),
        "resign": request("Resign", f_bytes(1, gid) + f_bytes(2, TOKEN)),
        "validate-record": request("ValidateMove", f_bytes(1, "\n".join(SAMPLE_MOVES[:10]))
                                   + f_bytes(3, move_notation(SAMPLE_MOVES[10]))),
        "validate-moves": request("ValidateMove", f_bytes(2, rules() + b"".join(
            f_bytes(2, move_notation(m)) for m in CONNECTION[:4]))
            + f_bytes(3, move_place("SE", "E7", 0))),
        "import": request("ImportGame", f_bytes(1, SAMPLE) + f_map(2, {"site": "here"})),
        "claim": request("ClaimVictory", f_bytes(1, gid) + f_bytes(2, TOKEN)),
        "render": request("RenderPosition", f_bytes(1, gid) + f_varint(2, 4)),
    }
    for name, data in seeds.items():
        write("request", name, data)

    # moves: option byte, then (a, b, c) triples choosing among legal moves.
    for i, head in enumerate([0x00, 0x01, 0x02, 0x08, 0x24, 0x1b]):
        body = hashlib.sha256(bytes([head, i])).digest() * 4
        write("moves", f"{i:02}", bytes([head]) + body)


if __name__ == "__main__":
    main()
