#!/usr/bin/env python3
"""Checks a stacks.svg: well-formed XML, one <title> per frame naming its ranks, the given
rank annotations present, no external references. Usage: svg_check.py SVG 'TEXT'..."""
import re
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def main():
    svg, wanted = sys.argv[1], sys.argv[2:]
    root = ET.parse(svg).getroot()  # raises on malformed XML
    titles = [t.text or "" for t in root.iter(NS + "title")]
    if not titles:
        sys.exit("no <title> in %s" % svg)
    for t in titles:
        if not re.search(r"\b\d+ (rank|ranks|rank-threads)\b", t):
            sys.exit("a title names no rank count: %r" % t)
    text = "\n".join(titles)
    for w in wanted:
        if w not in text:
            sys.exit("no title holds %r; titles:\n%s" % (w, text))
    raw = open(svg, encoding="utf-8").read()
    for bad in ("http://", "https://"):
        for m in re.finditer(re.escape(bad) + r"[^\"' ]*", raw):
            if not m.group(0).startswith("http://www.w3.org/2000/svg"):
                sys.exit("external reference %s" % m.group(0))
    if root.find(NS + "script") is None:
        sys.exit("no <script> (zoom, search)")
    print("svg ok: %d frames" % len(titles))


main()
