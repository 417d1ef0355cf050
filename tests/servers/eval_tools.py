#!/usr/bin/env python3
"""An MCP server (PyPI `mcp` 2.x, stdio) with ten small tools for the tool-calling evaluation
(tests/benches/tool_eval.rs, tests/eval/questions.toml).

Every tool really works, so the evaluation could execute calls too:
- get_weather(city): FIXTURE DATA. A fixed table of made-up conditions for a dozen cities (there is
  no network access); unknown cities are an error that lists the known ones.
- convert_units(value, from_unit, to_unit): real conversion of length, mass, volume, temperature.
- calculate(expression): real arithmetic, evaluated from Python's AST (numbers, + - * / // % **,
  parentheses, a few math functions), never with eval().
- word_count(text): words (whitespace-separated), characters, sentences.
- lookup_country(name): FIXTURE DATA. A small table of facts (currency, population, languages,
  calling code) for a dozen countries.
- book_table(restaurant, people, date, time?, seating?): FAKE BOOKING. Checks the values (a
  YYYY-MM-DD date, HH:MM time, 1-20 people, indoor/outdoor) and confirms; nothing is booked.
- send_message(to, text, urgent?): FAKE MESSAGING. Confirms what would be sent; nothing is sent.
- add_tags(item, tags): in-memory tags per item (lists as arguments).
- search_flights(origin, destination, date, passengers?, cabin?): FIXTURE DATA. Made-up flights.
- set_reminder(text, date, time?): in-memory reminders.

Usage: eval_tools.py (speaks MCP over stdin/stdout; logs go to stderr).
"""

import ast
import math
import operator
import re
from typing import Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("eval-tools")

# Fixture data, not real observations.
WEATHER = {
    "paris": ("Paris", 18, "partly cloudy", 62, 11),
    "london": ("London", 14, "light rain", 81, 19),
    "tokyo": ("Tokyo", 23, "sunny", 55, 8),
    "new york": ("New York", 21, "clear", 48, 14),
    "cairo": ("Cairo", 35, "sunny", 20, 12),
    "seattle": ("Seattle", 12, "rain", 88, 16),
    "sydney": ("Sydney", 19, "windy", 60, 32),
    "berlin": ("Berlin", 16, "overcast", 70, 10),
    "moscow": ("Moscow", 3, "snow", 85, 7),
    "mumbai": ("Mumbai", 31, "humid, thunderstorms", 90, 22),
    "san francisco": ("San Francisco", 17, "fog", 77, 18),
    "reykjavik": ("Reykjavik", 6, "sleet", 79, 28),
}

# Fixture data: rounded figures, enough for an evaluation.
COUNTRIES = {
    "france": ("France", "Euro (EUR)", 68_000_000, ["French"], "+33"),
    "japan": ("Japan", "Japanese yen (JPY)", 124_000_000, ["Japanese"], "+81"),
    "brazil": ("Brazil", "Brazilian real (BRL)", 203_000_000, ["Portuguese"], "+55"),
    "switzerland": (
        "Switzerland",
        "Swiss franc (CHF)",
        8_900_000,
        ["German", "French", "Italian", "Romansh"],
        "+41",
    ),
    "germany": ("Germany", "Euro (EUR)", 84_000_000, ["German"], "+49"),
    "india": ("India", "Indian rupee (INR)", 1_430_000_000, ["Hindi", "English"], "+91"),
    "canada": ("Canada", "Canadian dollar (CAD)", 40_000_000, ["English", "French"], "+1"),
    "mexico": ("Mexico", "Mexican peso (MXN)", 129_000_000, ["Spanish"], "+52"),
    "egypt": ("Egypt", "Egyptian pound (EGP)", 112_000_000, ["Arabic"], "+20"),
    "australia": ("Australia", "Australian dollar (AUD)", 27_000_000, ["English"], "+61"),
    "kenya": ("Kenya", "Kenyan shilling (KES)", 55_000_000, ["Swahili", "English"], "+254"),
    "norway": ("Norway", "Norwegian krone (NOK)", 5_500_000, ["Norwegian"], "+47"),
}
COUNTRY_ALIASES = {"swiss": "switzerland", "deutschland": "germany", "nippon": "japan"}

# Linear units: factor to the base unit of their dimension.
LINEAR = {
    "length": {"m": 1.0, "km": 1000.0, "cm": 0.01, "mm": 0.001, "mi": 1609.344, "yd": 0.9144, "ft": 0.3048, "in": 0.0254},
    "mass": {"kg": 1.0, "g": 0.001, "mg": 1e-6, "lb": 0.45359237, "oz": 0.028349523125, "t": 1000.0},
    "volume": {"l": 1.0, "ml": 0.001, "gal": 3.785411784, "qt": 0.946352946, "cup": 0.2365882365, "floz": 0.0295735295625},
}
UNIT_ALIASES = {
    "meter": "m", "meters": "m", "metre": "m", "metres": "m",
    "kilometer": "km", "kilometers": "km", "kilometre": "km", "kilometres": "km",
    "centimeter": "cm", "centimeters": "cm", "millimeter": "mm", "millimeters": "mm",
    "mile": "mi", "miles": "mi", "yard": "yd", "yards": "yd",
    "foot": "ft", "feet": "ft", "inch": "in", "inches": "in",
    "kilogram": "kg", "kilograms": "kg", "kgs": "kg", "gram": "g", "grams": "g",
    "milligram": "mg", "milligrams": "mg", "pound": "lb", "pounds": "lb", "lbs": "lb",
    "ounce": "oz", "ounces": "oz", "tonne": "t", "tonnes": "t", "ton": "t",
    "liter": "l", "liters": "l", "litre": "l", "litres": "l",
    "milliliter": "ml", "milliliters": "ml", "gallon": "gal", "gallons": "gal",
    "quart": "qt", "quarts": "qt", "cups": "cup", "fl oz": "floz", "fluid ounce": "floz",
    "fluid ounces": "floz",
    "celsius": "c", "°c": "c", "degc": "c", "fahrenheit": "f", "°f": "f", "degf": "f",
    "kelvin": "k",
}


def _unit(name: str) -> str:
    key = name.strip().lower()
    return UNIT_ALIASES.get(key, key)


def _to_kelvin(value: float, unit: str) -> float:
    return {"c": value + 273.15, "f": (value - 32) * 5 / 9 + 273.15, "k": value}[unit]


def _from_kelvin(value: float, unit: str) -> float:
    return {"c": value - 273.15, "f": (value - 273.15) * 9 / 5 + 32, "k": value}[unit]


@server.tool()
def get_weather(city: str) -> str:
    """Get the current weather (temperature in °C, conditions, humidity, wind) for a city."""
    row = WEATHER.get(city.strip().lower())
    if row is None:
        known = ", ".join(v[0] for v in WEATHER.values())
        raise ToolError(f"no weather data for {city!r}; known cities: {known}")
    name, temp, sky, humidity, wind = row
    return f"{name}: {temp} °C, {sky}, humidity {humidity}%, wind {wind} km/h"


@server.tool()
def convert_units(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a quantity between units of length, mass, volume or temperature (km, mi, kg, lb, l, gal, celsius, fahrenheit...)."""
    src, dst = _unit(from_unit), _unit(to_unit)
    if src in ("c", "f", "k") and dst in ("c", "f", "k"):
        result = _from_kelvin(_to_kelvin(value, src), dst)
    else:
        for units in LINEAR.values():
            if src in units and dst in units:
                result = value * units[src] / units[dst]
                break
        else:
            raise ToolError(f"cannot convert {from_unit!r} to {to_unit!r}")
    return f"{value:g} {from_unit} = {result:.4g} {to_unit}"


BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
FUNCTIONS = {
    "sqrt": math.sqrt, "abs": abs, "round": round, "log": math.log, "log10": math.log10,
    "exp": math.exp, "sin": math.sin, "cos": math.cos, "tan": math.tan, "floor": math.floor,
    "ceil": math.ceil,
}
CONSTANTS = {"pi": math.pi, "e": math.e}


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in CONSTANTS:
        return CONSTANTS[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 1000:
            raise ValueError("exponent too large")
        return BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
        return UNARY[type(node.op)](_eval(node.operand))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in FUNCTIONS
        and not node.keywords
    ):
        return FUNCTIONS[node.func.id](*[_eval(a) for a in node.args])
    raise ValueError(f"unsupported expression element: {ast.dump(node)[:60]}")


@server.tool()
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression such as '(3 + 4) * 12' or 'sqrt(81)'."""
    text = expression.replace("^", "**").replace("×", "*").replace("÷", "/")
    if len(text) > 200:
        raise ToolError("expression too long (200 characters at most)")
    try:
        result = _eval(ast.parse(text, mode="eval"))
    except (SyntaxError, ValueError, TypeError, ZeroDivisionError, OverflowError) as exc:
        raise ToolError(f"cannot evaluate {expression!r}: {exc}") from None
    if isinstance(result, float) and result.is_integer() and abs(result) < 1e15:
        result = int(result)
    return f"{expression} = {result}"


@server.tool()
def word_count(text: str) -> str:
    """Count the words, characters and sentences in a text."""
    words = text.split()
    sentences = [s for s in re.split(r"[.!?]+", text) if s.strip()]
    return f"{len(words)} words, {len(text)} characters, {len(sentences)} sentences"


@server.tool()
def lookup_country(name: str) -> str:
    """Look up a country's currency, population, official languages and international calling code."""
    key = name.strip().lower()
    key = COUNTRY_ALIASES.get(key, key)
    row = COUNTRIES.get(key)
    if row is None:
        known = ", ".join(v[0] for v in COUNTRIES.values())
        raise ToolError(f"no data for {name!r}; known countries: {known}")
    country, currency, population, languages, code = row
    return (
        f"{country}: currency {currency}, population about {population:,}, "
        f"languages {', '.join(languages)}, calling code {code}"
    )


DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
CLOCK = re.compile(r"^\d{2}:\d{2}$")


@server.tool()
def book_table(
    restaurant: str,
    people: int,
    date: str,
    time: str | None = None,
    seating: Literal["indoor", "outdoor"] | None = None,
) -> str:
    """Book a table at a restaurant. date is YYYY-MM-DD, time is HH:MM (24 h); seating is indoor or outdoor."""
    if not DATE.match(date):
        raise ToolError(f"date must be YYYY-MM-DD, got {date!r}")
    if time is not None and not CLOCK.match(time):
        raise ToolError(f"time must be HH:MM, got {time!r}")
    if not 1 <= people <= 20:
        raise ToolError("people must be between 1 and 20")
    when = f"{date} {time}" if time else date
    where = f", {seating}" if seating else ""
    return f"Booked (not really: fixture) a table for {people} at {restaurant} on {when}{where}."


@server.tool()
def send_message(to: str, text: str, urgent: bool = False) -> str:
    """Send a short text message to a contact by name."""
    flag = " (urgent)" if urgent else ""
    return f"Message to {to}{flag} would be sent (fixture, nothing sent): {text}"


TAGS: dict[str, list[str]] = {}


@server.tool()
def add_tags(item: str, tags: list[str]) -> str:
    """Add one or more tags (a list of words) to an item such as a note, photo or file."""
    have = TAGS.setdefault(item, [])
    have.extend(t for t in tags if t not in have)
    return f"{item}: tags {', '.join(have)}"


@server.tool()
def search_flights(
    origin: str,
    destination: str,
    date: str,
    passengers: int = 1,
    cabin: Literal["economy", "business", "first"] = "economy",
) -> str:
    """Search flights between two cities on a date (YYYY-MM-DD), for a number of passengers and a cabin class."""
    if not DATE.match(date):
        raise ToolError(f"date must be YYYY-MM-DD, got {date!r}")
    price = 80 + (len(origin) * 37 + len(destination) * 53) % 400
    factor = {"economy": 1, "business": 3, "first": 5}[cabin]
    return (
        f"FIXTURE: 2 flights {origin} -> {destination} on {date}: 08:10 and 17:45, "
        f"{cabin}, {passengers} passenger(s), from {price * factor * passengers} EUR total"
    )


REMINDERS: list[str] = []


@server.tool()
def set_reminder(text: str, date: str, time: str | None = None) -> str:
    """Set a reminder with a text on a date (YYYY-MM-DD), optionally at a time (HH:MM)."""
    if not DATE.match(date):
        raise ToolError(f"date must be YYYY-MM-DD, got {date!r}")
    REMINDERS.append(f"{date} {time or ''} {text}".strip())
    return f"Reminder set for {date}{' ' + time if time else ''}: {text}"


if __name__ == "__main__":
    server.run("stdio")
