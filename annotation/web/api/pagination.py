"""Page-number pagination whose page size the client may choose, up to a cap."""

from rest_framework.pagination import PageNumberPagination


class PageNumberWithSize(PageNumberPagination):
    """``?page=N&page_size=M``; ``page_size`` defaults to 50 and is capped at 500 so one request stays cheap."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
