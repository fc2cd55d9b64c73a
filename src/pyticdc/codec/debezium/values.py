"""Value arithmetic both directions share: calendar, Go/TiDB time and number text, decimal text.

Everything here reproduces what TiCDC's Go code does with the standard library (``time.Parse``,
``strconv.ParseFloat``, TiDB ``StrToDateTime`` / ``StrToDuration``, ``Time.GoTime``) so the
encoder's numbers match byte for byte (ticdc-reference.md §5.2), and the decoder reads them back.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Final, NamedTuple
from zoneinfo import ZoneInfo

from pyticdc.codec.jsontext import format_float_f

__all__ = [
    "MIN_TIMESTAMP",
    "US_PER_DAY",
    "US_PER_SECOND",
    "ZERO_ZONED",
    "WallTime",
    "adjust_two_digit_year",
    "bit_byte_count",
    "civil_from_days",
    "clean_float",
    "days_from_civil",
    "days_in_month",
    "decimal_from_unscaled",
    "decimal_text",
    "escape_enum_option",
    "format_civil",
    "format_duration_us",
    "format_wall",
    "go_parse_float",
    "is_leap",
    "is_utc",
    "local_to_utc_seconds",
    "pad_scale",
    "parse_bit_default",
    "parse_datetime",
    "parse_duration_us",
    "parse_go_date",
    "split_allowed",
    "to_bytes",
    "utc_to_local",
    "valid_date",
    "wall_epoch_us",
    "wall_from_epoch_us",
]


US_PER_SECOND: Final = 1_000_000
US_PER_DAY: Final = 86_400 * US_PER_SECOND


#: The ZonedTimestamp text of the epoch (TiCDC writes it for zero and CURRENT_TIMESTAMP values).
ZERO_ZONED: Final = "1970-01-01T00:00:00Z"


# --------------------------------------------------------------------------- ENUM/SET options
def escape_enum_option(option: str) -> str:
    """TiCDC ``common.EscapeEnumAndSetOptions`` (ENUM ``allowed`` parameter)."""
    return option.replace(",", "\\,").replace("\\'", "'").replace("''", "'")


def split_allowed(allowed: str, escaped: bool) -> tuple[str, ...]:
    """Split an ``allowed`` parameter back into elements (``\\,`` is a literal comma when escaped)."""
    if not escaped:
        return tuple(allowed.split(","))
    parts: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(allowed):
        c = allowed[i]
        if c == "\\" and i + 1 < len(allowed) and allowed[i + 1] == ",":
            current.append(",")
            i += 2
            continue
        if c == ",":
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    parts.append("".join(current))
    return tuple(parts)


# --------------------------------------------------------------------------- calendar
def is_leap(year: int) -> bool:
    """Proleptic Gregorian leap year (year 0 is a leap year, as in Go)."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


_MONTH_DAYS: Final = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def days_in_month(year: int, month: int) -> int:
    """Days in ``month`` of ``year``."""
    return 29 if month == 2 and is_leap(year) else _MONTH_DAYS[month - 1]


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year, H. Hinnant's algorithm)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """The (year, month, day) ``days`` after 1970-01-01."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (month <= 2), month, day


def valid_date(year: int, month: int, day: int) -> bool:
    """Whether Go's ``time`` accepts the date unchanged (month 1-12, day within the month)."""
    return 1 <= month <= 12 and 1 <= day <= days_in_month(year, month)


def adjust_two_digit_year(year: int) -> int:
    """TiCDC's Debezium year fix-up: years < 70 get +2000, < 100 get +1900 (§5.2 DATE/DATETIME)."""
    if year < 70:
        return year + 2000
    if year < 100:
        return year + 1900
    return year


def format_civil(days: int) -> str:
    """``YYYY-MM-DD`` of a day number (years below 1000 zero-padded, as Go and TiDB print them)."""
    year, month, day = civil_from_days(days)
    return f"{year:04d}-{month:02d}-{day:02d}"


# --------------------------------------------------------------------------- date and time text
class WallTime(NamedTuple):
    """A TiDB date-time as its fields (no validation beyond digit ranges)."""

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    micro: int

    def key(self) -> tuple[int, ...]:
        """Field tuple TiDB's ``Time.Compare`` orders by."""
        return tuple(self)


_DATE_STRICT: Final = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_DATETIME: Final = re.compile(
    r"\s*(\d{1,4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d*))?)?)?\s*"
)
_DURATION: Final = re.compile(r"\s*(-)?(?:(\d+)\s+)?(\d+):(\d{1,2})(?::(\d{1,2}))?(?:\.(\d*))?\s*")
MIN_TIMESTAMP: Final = (1970, 1, 1, 0, 0, 1, 0)


def _round_fraction(digits: str, fsp: int) -> int:
    """Microseconds of a fraction rounded half-up to ``fsp`` digits (TiDB ``RoundFrac``)."""
    fsp = min(max(fsp, 0), 6)
    digits = (digits or "")[:7].ljust(7, "0")
    micro = int(digits[:6]) + (1 if digits[6] >= "5" else 0)
    unit: int = 10 ** (6 - fsp)
    return (micro + unit // 2) // unit * unit


def parse_go_date(text: str) -> tuple[int, int, int] | None:
    """Go ``time.Parse("2006-01-02", text)``: the valid date, or None when Go would fail."""
    m = _DATE_STRICT.fullmatch(text)
    if m is None:
        return None
    year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
    return (year, month, day) if valid_date(year, month, day) else None


def parse_datetime(text: str, fsp: int) -> WallTime | None:
    """TiDB ``StrToDateTime(text, fsp)`` for the text forms TiDB prints; None if unparsable."""
    m = _DATETIME.fullmatch(text)
    if m is None:
        return None
    year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
    hour, minute, second = int(m.group(4) or 0), int(m.group(5) or 0), int(m.group(6) or 0)
    if hour > 23 or minute > 59 or second > 59 or month > 12 or day > 31:
        return None
    micro = _round_fraction(m.group(7) or "", fsp)
    if micro >= US_PER_SECOND:
        # The rounding carry moves the wall clock on; only valid dates can carry (TiDB does the same).
        if not valid_date(year, month, day):
            micro = US_PER_SECOND - 10 ** (6 - min(max(fsp, 0), 6))
        else:
            total = wall_epoch_us(WallTime(year, month, day, hour, minute, second, 0)) + US_PER_SECOND
            return wall_from_epoch_us(total)
    return WallTime(year, month, day, hour, minute, second, micro)


def wall_epoch_us(t: WallTime) -> int:
    """Microseconds since the epoch of a valid wall time read as UTC."""
    days = days_from_civil(t.year, t.month, t.day)
    return ((days * 24 + t.hour) * 60 + t.minute) * 60 * US_PER_SECOND + t.second * US_PER_SECOND + t.micro


def wall_from_epoch_us(micros: int) -> WallTime:
    """The UTC wall time of an epoch microsecond count."""
    days, rest = divmod(micros, US_PER_DAY)
    year, month, day = civil_from_days(days)
    seconds, micro = divmod(rest, US_PER_SECOND)
    return WallTime(year, month, day, seconds // 3600, seconds // 60 % 60, seconds % 60, micro)


def parse_duration_us(text: str, fsp: int) -> int | None:
    """TiDB ``StrToDuration(text, fsp)`` in microseconds for ``[-][D ]HH:MM[:SS][.f]``; None if unparsable."""
    m = _DURATION.fullmatch(text)
    if m is None:
        return None
    days = int(m.group(2) or 0)
    hours, minutes, seconds = int(m.group(3)), int(m.group(4)), int(m.group(5) or 0)
    if minutes > 59 or seconds > 59:
        return None
    micro = _round_fraction(m.group(6) or "", fsp)
    total = ((days * 24 + hours) * 3600 + minutes * 60 + seconds) * US_PER_SECOND + micro
    return -total if m.group(1) else total


def format_duration_us(micros: int, digits: int) -> str:
    """``[-]HH:MM:SS[.f…]`` of a signed microsecond count with ``digits`` fraction digits."""
    sign = "-" if micros < 0 else ""
    seconds, micro = divmod(abs(micros), US_PER_SECOND)
    text = f"{sign}{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    if digits > 0:
        text += "." + f"{micro:06d}"[:digits]
    return text


def format_wall(t: WallTime, digits: int, sep: str = " ") -> str:
    """``YYYY-MM-DD HH:MM:SS[.f…]`` with ``digits`` fraction digits (the model's TiDB form)."""
    text = f"{t.year:04d}-{t.month:02d}-{t.day:02d}{sep}{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    if digits > 0:
        text += "." + f"{t.micro:06d}"[:digits]
    return text


# --------------------------------------------------------------------------- time zones
def _offset_at(zone: ZoneInfo, instant: int) -> int:
    """UTC offset (seconds) of ``zone`` at a Unix second."""
    offset = datetime.fromtimestamp(instant, tz=zone).utcoffset()
    return 0 if offset is None else int(offset.total_seconds())


def is_utc(zone: ZoneInfo) -> bool:
    """Whether ``zone`` is UTC (fast path: no offset arithmetic)."""
    return zone.key in ("UTC", "Etc/UTC", "Etc/Zulu", "Zulu", "UCT", "Etc/UCT", "GMT", "Etc/GMT")


def local_to_utc_seconds(t: WallTime, zone: ZoneInfo) -> int | None:
    """Go ``time.Date(..., loc)`` then TiDB ``GoTime``'s check: the Unix second, or None in a DST gap."""
    local = days_from_civil(t.year, t.month, t.day) * 86_400 + t.hour * 3600 + t.minute * 60 + t.second
    if is_utc(zone):
        return local
    try:
        # Go looks the offset up at the local time read as UTC, then once more at the result
        # if that falls outside the zone period (time.Date); the offset at the result covers both.
        first = _offset_at(zone, local)
        offset = _offset_at(zone, local - first)
        instant = local - offset
        if instant + _offset_at(zone, instant) != local:
            return None  # a time in a DST gap: Go normalises it and GoTime rejects the change
    except (OverflowError, OSError, ValueError):
        return None
    return instant


def utc_to_local(instant: int, zone: ZoneInfo) -> WallTime | None:
    """The wall time of Unix second ``instant`` in ``zone`` (None if out of range)."""
    try:
        offset = 0 if is_utc(zone) else _offset_at(zone, instant)
    except (OverflowError, OSError, ValueError):
        return None
    return wall_from_epoch_us((instant + offset) * US_PER_SECOND)


# --------------------------------------------------------------------------- numbers and bytes
_GO_FLOAT: Final = re.compile(
    r"[+-]?(?:(?:\d+(?:_\d+)*\.?(?:\d+(?:_\d+)*)?|\.\d+(?:_\d+)*)(?:[eE][+-]?\d+)?|inf|infinity|nan)",
    re.IGNORECASE,
)


def go_parse_float(text: str) -> float | None:
    """Go ``strconv.ParseFloat(text, 64)``: None when Go reports an error (syntax or range)."""
    if _GO_FLOAT.fullmatch(text) is None or "_" in text:
        return None
    value = float(text)
    if math.isinf(value) and "inf" not in text.lower():
        return None  # out of range: Go returns ±Inf with ErrRange
    return value


def clean_float(value: float) -> float:
    """TiCDC's mounter replaces NaN and ±Inf by 0 before any codec sees them (reference §1.1)."""
    return 0.0 if math.isnan(value) or math.isinf(value) else value


def _go_div(a: int, b: int) -> int:
    """Go integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def bit_byte_count(flen: int) -> int:
    """``getBitFromUint64``'s byte count: ceil(flen / 8) with Go's truncating arithmetic."""
    count = _go_div(flen, 8)
    if flen - count * 8 != 0:
        count += 1
    return count


def _bit_bytes(text: str) -> bytes:
    # TiDB keeps a BIT default as its raw bytes; the model carries them as a str of code points.
    if all(ord(c) < 256 for c in text):
        return text.encode("latin-1")
    return text.encode("utf-8", "surrogateescape")


def parse_bit_default(text: str, flen: int) -> int | None:
    """TiCDC ``parseBit`` + ``ParseUint(…, 2, 64)``: the BIT default's integer, None on error."""
    data = _bit_bytes(text)
    if not data or len(data) > 8:
        return None
    return int.from_bytes(data, "big")


def decimal_text(value: float) -> str:
    """A DECIMAL read from a float64: the shortest positional text (``-0`` as ``0``)."""
    text = format_float_f(value, 64)
    return "0" if text == "-0" else text


def decimal_from_unscaled(unscaled: int, scale: int) -> str:
    """DECIMAL text of ``unscaled × 10^-scale``, exact at any precision (no 28-digit context)."""
    sign = "-" if unscaled < 0 else ""
    digits = str(-unscaled if unscaled < 0 else unscaled)
    if scale <= 0:
        return sign + digits
    digits = digits.rjust(scale + 1, "0")
    return f"{sign}{digits[:-scale]}.{digits[-scale:]}"


def pad_scale(text: str, scale: int) -> str:
    """A positional decimal text with at least ``scale`` fraction digits (DECIMAL(M,D) prints D)."""
    if scale <= 0:
        return text
    point = text.find(".")
    if point < 0:
        return f"{text}.{'0' * scale}"
    missing = scale - (len(text) - point - 1)
    return text + "0" * missing if missing > 0 else text


def to_bytes(text: str) -> bytes:
    """A decoded JSON string back to the bytes it was written from."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")
